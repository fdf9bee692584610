-- A real repository's file in headless Neovim (0.7+): `:write`, wait for the diagnostics (as many as
-- $TRITONLENS_NVIM_COUNT), hover a load line ($TRITONLENS_NVIM_LINE, 0-based), then ask for the code actions of
-- the first diagnostic with code $TRITONLENS_NVIM_FIX (what the server answers, an empty list included).
-- Writes what it saw, with the latencies in ms, as JSON to $TRITONLENS_NVIM_OUT.
--   nvim --headless --clean -u NONE -c "luafile tests/nvim/corpus_file.lua" liger_kernel/ops/rms_norm.py
local session = dofile(debug.getinfo(1, "S").source:sub(2):match("(.*/)") .. "session.lua")
local load_line = tonumber(os.getenv("TRITONLENS_NVIM_LINE"))
local count = tonumber(os.getenv("TRITONLENS_NVIM_COUNT"))
local fix_code = os.getenv("TRITONLENS_NVIM_FIX")
local result = {}
local function ms(since)
  return (vim.loop.hrtime() - since) / 1e6
end

session.run(result, function()
  local bufnr, client_id = session.attach()
  local function ours()
    return session.ours(bufnr)
  end
  result.attach_wait = vim.wait(60000, function() return vim.lsp.buf_is_attached(bufnr, client_id) end, 50)

  local saved = vim.loop.hrtime()
  vim.cmd("write")
  result.first_wait = vim.wait(300000, function() return #ours() > 0 end, 20)
  result.first_ms = ms(saved)
  result.all_wait = vim.wait(300000, function() return #ours() >= count end, 50)
  result.all_ms = ms(saved)
  result.diagnostics = {}
  for _, d in ipairs(ours()) do
    table.insert(result.diagnostics, { code = d.code, lnum = d.lnum, col = d.col, message = d.message })
  end

  local asked = vim.loop.hrtime()
  result.hover = session.hover(load_line, 8, 30000)
  result.hover_wait = result.hover ~= nil
  result.hover_ms = ms(asked)

  local target
  for _, d in ipairs(ours()) do
    if d.code == fix_code and (target == nil or d.lnum < target.lnum) then
      target = d
    end
  end
  vim.api.nvim_win_set_cursor(0, { target.lnum + 1, target.col })
  result.action_line = target.lnum
  -- The request as Neovim's own code_action() builds it, sent directly so that an empty answer is seen too.
  local params = vim.lsp.util.make_range_params()
  params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, target.lnum) }
  asked = vim.loop.hrtime()
  local answers = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 200000)
  result.action_ms = ms(asked)
  result.action_wait = answers ~= nil and answers[client_id] ~= nil and answers[client_id].err == nil
  result.actions = {}
  for _, action in ipairs((answers and answers[client_id] and answers[client_id].result) or {}) do
    table.insert(result.actions, action.title)
  end
  vim.lsp.stop_client(client_id)
end)
