-- Drive tritonlens from headless Neovim (0.7+): open a kernel file, wait for diagnostics, fix it, :write, wait for
-- them to clear. Writes what it saw as JSON to $TRITONLENS_NVIM_OUT. Usage:
--   nvim --headless --clean -u NONE -c "luafile tests/nvim/check_diagnostics.lua" kernel.py
local out_path = os.getenv("TRITONLENS_NVIM_OUT")
local server = vim.fn.json_decode(os.getenv("TRITONLENS_NVIM_CMD"))
local result = { events = {} }

local function finish()
  local f = io.open(out_path, "w")
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  local bufnr = vim.api.nvim_get_current_buf()
  vim.bo[bufnr].filetype = "python"
  local client_id = vim.lsp.start_client({
    name = "tritonlens",
    cmd = server,
    root_dir = vim.fn.getcwd(),
    init_options = { target = "cuda:90", maxWorkers = 1, compileTimeout = 120 },
  })
  vim.lsp.buf_attach_client(bufnr, client_id)

  local function ours()
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.source == "tritonlens" then
        table.insert(found, { code = d.code, lnum = d.lnum, col = d.col, message = d.message })
      end
    end
    return found
  end

  result.first_wait = vim.wait(90000, function() return #ours() > 0 end, 100)
  result.before = ours()

  -- Fix the non-power-of-2 arange and save with :write (didSave carries the change).
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for i, line in ipairs(lines) do
    lines[i] = line:gsub("tl%.arange%(0, 100%)", "tl.arange(0, 128)")
  end
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.cmd("write")
  result.second_wait = vim.wait(90000, function() return #ours() == 0 end, 100)
  result.after = ours()
  vim.lsp.stop_client(client_id)
end)
if not ok then
  result.error = tostring(err)
end
finish()
