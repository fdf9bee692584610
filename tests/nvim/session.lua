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
