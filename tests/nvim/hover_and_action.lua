-- Drive tritonlens from headless Neovim (0.7+) the way a user does: `vim.lsp.buf.hover()` on a load line (the
-- markdown Neovim puts in its float), then `vim.lsp.buf.code_action()` on the PTX001 diagnostic (the first quick fix
-- picked from `vim.ui.select`), `:write`, and the finding gone from that line. Writes what it saw as JSON to $TRITONLENS_NVIM_OUT.
--   nvim --headless --clean -u NONE -c "luafile tests/nvim/hover_and_action.lua" narrow.py
local session = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "session.lua")
local load_line = tonumber(os.getenv("TRITONLENS_NVIM_LINE")) -- 0-based
local result = {}

session.run(result, function()
  local bufnr, client_id = session.attach()

  local function codes()
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.source == "tritonlens" then
        table.insert(found, d.code)
      end
    end
    return found
  end
  local function has(code)
    return vim.tbl_contains(codes(), code)
  end

  result.diagnostics_wait = vim.wait(120000, function() return has("PTX001") end, 100)

  -- Hover: keep what Neovim's own handler shows.
  local original = vim.lsp.util.open_floating_preview
  vim.lsp.util.open_floating_preview = function(contents, syntax, opts)
    result.hover = contents
    return original(contents, syntax, opts)
  end
  vim.api.nvim_win_set_cursor(0, { load_line + 1, 8 })
  vim.lsp.buf.hover()
  result.hover_wait = vim.wait(10000, function() return result.hover ~= nil end, 50)
  vim.lsp.util.open_floating_preview = original

  -- Code action: the first PTX001's line (in a many-kernel file, asked while the other kernels still compile), the
  -- first action picked; a placeholder still re-compiling is resolved by Neovim itself (codeAction/resolve).
  local first
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.code == "PTX001" and (first == nil or d.lnum < first.lnum) then
      first = d
    end
  end
  vim.api.nvim_win_set_cursor(0, { first.lnum + 1, first.col })
  result.action_line = first.lnum
  vim.ui.select = function(items, opts, on_choice)
    result.actions = {}
    for _, item in ipairs(items) do
      local action = item[2] or item.action or item
      table.insert(result.actions, action.title)
    end
    on_choice(items[1], 1)
  end
  vim.lsp.buf.code_action()
  result.action_wait = vim.wait(120000, function()
    return vim.fn.search("n_elements=i32%16", "nw") > 0
  end, 100)
  vim.cmd("write")
  result.fixed_wait = vim.wait(120000, function()
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      if d.code == "PTX001" and d.lnum == first.lnum then
        return false
      end
    end
    return true
  end, 100)
  result.after = codes()
  vim.lsp.stop_client(client_id)
end)
