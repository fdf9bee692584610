-- Shared by the Neovim test scripts: start tritonlens on the current buffer, and write what a script saw as JSON to
-- $TRITONLENS_NVIM_OUT before quitting. The server command comes as JSON in $TRITONLENS_NVIM_CMD.
local M = {}

function M.attach()
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = "python"
  local client_id = vim.lsp.start_client({
    name = "tritonlens",
    cmd = vim.fn.json_decode(os.getenv("TRITONLENS_NVIM_CMD")),
    root_dir = vim.fn.getcwd(),
    init_options = { target = "cuda:90", maxWorkers = 1, compileTimeout = 120 },
  })
  vim.lsp.buf_attach_client(bufnr, client_id)
  return bufnr, client_id
end

-- The buffer's diagnostics that tritonlens published.
function M.ours(bufnr)
  return vim.tbl_filter(function(d) return d.source == "tritonlens" end, vim.diagnostic.get(bufnr))
end

-- `vim.lsp.buf.hover()` at 0-based `line`: what Neovim's own handler puts in its float (nil after `timeout` ms).
function M.hover(line, col, timeout)
  local shown
  local original = vim.lsp.util.open_floating_preview
  vim.lsp.util.open_floating_preview = function(contents, syntax, opts)
    shown = contents
    return original(contents, syntax, opts)
  end
  vim.api.nvim_win_set_cursor(0, { line + 1, col })
  vim.lsp.buf.hover()
  vim.wait(timeout, function() return shown ~= nil end, 10)
  vim.lsp.util.open_floating_preview = original
  return shown
end

-- Run `body(result)` (errors are recorded, not raised), then write `result` and quit.
function M.run(result, body)
  local ok, err = pcall(body, result)
  if not ok then
    result.error = tostring(err)
  end
  local f = io.open(os.getenv("TRITONLENS_NVIM_OUT"), "w")
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qall!")
end

return M
