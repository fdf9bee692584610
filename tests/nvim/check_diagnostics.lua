-- Drive tritonlens from headless Neovim (0.7+): open a kernel file, wait for diagnostics, fix it, :write, wait for
-- them to clear. Writes what it saw as JSON to $TRITONLENS_NVIM_OUT. Usage:
--   nvim --headless --clean -u NONE -c "luafile tests/nvim/check_diagnostics.lua" kernel.py
local session = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "session.lua")
local result = { events = {} }

session.run(result, function()
  local bufnr, client_id = session.attach()

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
