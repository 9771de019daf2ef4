--- What a user installs: the man page (moraine.1) renders and documents every
-- command the CLI has; `make install` puts the versioned shared library with
-- its SONAME, its symlinks and the man page under PREFIX, and `make uninstall`
-- takes them away; a user's install builds without -Werror, development
-- builds with it.
local moraine = require "moraine"
local support = require "support"

local RUNTIME = rawget(_G, "jit") and "luajit" or "lua5.4"
local BUILD = os.getenv("MORAINE_BUILD") or "build"

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs a shell command, without the sanitizer runtime make asan preloads into
-- the interpreter unless @preload (the moraine command needs it: its module
-- is instrumented); returns ok, stdout, stderr.
local function sh(cmd, preload)
  local dir = support.tmpdir("sh")
  support.mkdir(dir)
  local ok = os.execute(("%ssh -c %s > %s 2> %s"):format(preload and "" or "env -u LD_PRELOAD ", q(cmd), q(dir .. "/out"),
    q(dir .. "/err")))
  return ok == true or ok == 0, support.read(dir .. "/out"), support.read(dir .. "/err")
end

-- The commands `moraine --help` lists (its "commands:" block).
local function cli_commands()
  local ok, out, err = sh("MORAINE_LUA=" .. RUNTIME .. " sh scripts/moraine-dev --help", true)
  assert(ok, err)
  local block = assert(out:match("\ncommands:\n(.-)\n\n"), "no commands: block in moraine --help:\n" .. out)
  local names = {}
  -- "  NAME  summary", or one space after a name of 10 characters (clustering)
  for line in (block .. "\n"):gmatch("([^\n]*)\n") do names[#names + 1] = line:match("^  ([%w_-]+) ") end
  return names
end

-- The commands, in `moraine --help`'s order, whose command line is @p.
local function commands_where(p)
  local out = {}
  for _, name in ipairs(cli_commands()) do
    if p(name) then out[#out + 1] = name end
  end
  return out
end

-- A parenthesised list of command names, "(a, b, c)" -> {"a", "b", "c"}.
local function list_of(text)
  local out = {}
  for name in assert(text, "list not found"):gmatch("[%w_-]+") do out[#out + 1] = name end
  return out
end

describe("the man page moraine.1", function()
  after_each(support.cleanup)

  it("renders with man -l, without a groff warning", function()
    local ok, out, err = sh("LC_ALL=C.UTF-8 MANWIDTH=100 MANPAGER=cat PAGER=cat man -l ./moraine.1")
    assert(ok, err)
    assert.equal("", err)
    assert.truthy(out:find("MORAINE%(1%)"), out)
    for _, section in ipairs({ "NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "OPTIONS", "EXIT STATUS", "EXAMPLES" }) do
      assert.truthy(out:find("\n" .. section .. "\n", 1, true), section .. " missing:\n" .. out)
    end
    local gok, _, gerr = sh("LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z moraine.1")
    assert(gok, gerr)
    assert.equal("", gerr)
  end)

  it("documents every command `moraine --help` lists, each as an entry of COMMANDS", function()
    local names = cli_commands()
    assert.is_true(#names >= 12, "moraine --help listed only " .. #names .. " commands")
    local ok, out, err = sh("LC_ALL=C.UTF-8 MANWIDTH=100 MANPAGER=cat PAGER=cat man -l ./moraine.1")
    assert(ok, err)
    local commands = assert(out:match("\nCOMMANDS\n(.-)\nOPTIONS\n"), out)
    local missing = {}
    for _, name in ipairs(names) do
      -- an entry: the command at the entry's indent, alone or followed by its arguments
      if not commands:find("\n       " .. name:gsub("%-", "%%-") .. "[ \n]") and
         not commands:find("^       " .. name:gsub("%-", "%%-") .. "[ \n]") then
        missing[#missing + 1] = name
      end
    end
    assert.are.same({}, missing)
  end)

  it("documents every option the commands' help names", function()
    local ok, out, err = sh("LC_ALL=C.UTF-8 MANWIDTH=100 MANPAGER=cat PAGER=cat man -l ./moraine.1")
    assert(ok, err)
    local missing, seen = {}, {}
    local hok, usage, herr = sh("MORAINE_LUA=" .. RUNTIME .. " sh scripts/moraine-dev --help", true)
    assert(hok, herr)
    local texts = { usage }
    for _, name in ipairs(cli_commands()) do
      local cok, text, cerr = sh("MORAINE_LUA=" .. RUNTIME .. " sh scripts/moraine-dev help " .. name, true)
      assert(cok, cerr)
      texts[#texts + 1] = text
    end
    for _, text in ipairs(texts) do
      for opt in text:gmatch("%-%-[%a][%w-]*") do
        if not seen[opt] then
          seen[opt] = true
          if not out:find(opt, 1, true) then missing[#missing + 1] = opt end
        end
      end
    end
    assert.is_true(seen["--json"] and seen["--at"] and true or false, "no options found in the help texts")
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  it("lists, as README.md and moraine --help do, the commands that take --json, --at and --progress", function()
    local dir = support.tmpdir("flags") .. "/none" -- no catalog there: nothing runs, nothing is made
    local function cli(args)
      local _, out, err = sh("MORAINE_LUA=" .. RUNTIME .. " sh scripts/moraine-dev -c " .. q(dir) .. " " .. args
        .. " < /dev/null", true)
      return out .. err
    end
    -- what the command line accepts: main refuses --json for a command
    -- whose help entry has no json; argparse refuses an --at it was not given
    local json = commands_where(function(c) return not cli(c .. " --json"):find("does not apply", 1, true) end)
    local at = commands_where(function(c) return not cli(c .. " --at x"):find("unknown option --at", 1, true) end)
    local progress = commands_where(function(c) return cli("help " .. c):find("\n  %-%-progress ") ~= nil end)
    assert.is_true(#json >= 12 and #at >= 4 and #progress >= 4, "too few commands found")
    local ok, man = sh("LC_ALL=C.UTF-8 MANWIDTH=100 MANPAGER=cat PAGER=cat man -l ./moraine.1")
    assert(ok, man)
    man = man:gsub("%s+", " ")
    local options = assert(man:match(" OPTIONS (.-) ENVIRONMENT "), man)
    assert.are.same(json, list_of(options:match("%-%-json One JSON document on standard output (%b())")))
    assert.are.same(at, list_of(options:match("%-%-at S Read the catalog as of snapshot S (%b())")))
    assert.are.same(progress, list_of(options:match("%-%-progress Show progress on standard error even when it is not a terminal (%b())")))
    assert.are.same(progress, list_of(man:match(" Long work (%b()) shows")))
    -- DESCRIPTION: "The read commands (...), and a, b and c, take --json"
    local read, more = man:match(" The read commands (%b()), and (.-), take %-%-json:")
    local described = list_of(read)
    for _, c in ipairs(list_of(more)) do if c ~= "and" then described[#described + 1] = c end end
    local sorted = {}
    for i, c in ipairs(json) do sorted[i] = c end
    table.sort(sorted)
    table.sort(described)
    assert.are.same(sorted, described)
    local usage = cli("--help"):gsub("%s+", " ")
    assert.are.same(json, list_of(usage:match(" %-%-json (%b()):")))
    assert.are.same(at, list_of(usage:match(" %-%-at S (%b()):")))
    assert.are.same(progress, list_of(usage:match(" Long work (%b()) shows")))
    local readme = support.read("README.md"):gsub("%s+", " ")
    assert.are.same(json, list_of(readme:match(" `%-%-json` (%b()):")))
    assert.are.same(at, list_of(readme:match(" `%-%-at S` (%b()):")))
    assert.are.same(progress, list_of(readme:match(" Long work (%b()) shows")))
  end)

  it("carries the version of the module", function()
    local th = support.read("moraine.1"):match('\n%.TH MORAINE 1 "[^"]*" "moraine ([^"]+)"')
    assert.equal(moraine.version, th)
  end)
end)

describe("make install and make uninstall", function()
  after_each(support.cleanup)

  it("install the versioned library with its SONAME and symlinks, the man page and a pc file of this version; uninstall removes them", function()
    local dest = support.tmpdir("destdir")
    local ok, out, err = sh(("make --no-print-directory -s install DESTDIR=%s PREFIX=/usr/local BUILD=%s"):format(q(dest), q(BUILD)))
    assert(ok, out .. err)
    local lib = dest .. "/usr/local/lib/"
    local v = moraine.version
    -- the real file, the SONAME link and the development link
    local lok, ls = sh(("cd %s && for f in libmoraine.so*; do if [ -L \"$f\" ]; then echo \"$f -> $(readlink \"$f\")\"; else echo \"$f\"; fi; done"):format(q(lib)))
    assert(lok, ls)
    assert.equal(("libmoraine.so -> libmoraine.so.0\nlibmoraine.so.0 -> libmoraine.so.%s\nlibmoraine.so.%s\n"):format(v, v), ls)
    local sok, dyn = sh("objdump -p " .. q(lib .. "libmoraine.so." .. v))
    assert(sok, dyn)
    assert.truthy(dyn:find("SONAME%s+libmoraine%.so%.0\n"), dyn)
    assert.equal(support.read("moraine.1"), support.read(dest .. "/usr/local/share/man/man1/moraine.1"))
    assert.truthy(support.read(lib .. "pkgconfig/moraine.pc"):find("\nVersion: " .. v:gsub("%.", "%%.") .. "\n"))
    -- installing into a DESTDIR runs no ldconfig, it says what to do
    assert.truthy(out:find("ldconfig", 1, true), out)

    ok, out, err = sh(("make --no-print-directory -s uninstall DESTDIR=%s PREFIX=/usr/local BUILD=%s"):format(q(dest), q(BUILD)))
    assert(ok, out .. err)
    local _, left = sh("cd " .. q(dest) .. " && find . ! -type d")
    assert.equal("", left)
  end)

  it("build with -Werror for development, without it for a user's make install (DEV=1 keeps it)", function()
    local scratch = support.tmpdir("nobuild")
    local function cc_lines(args)
      local ok, out, err = sh(("make --no-print-directory -n -B BUILD=%s %s"):format(q(scratch), args))
      assert(ok, err)
      local lines = {}
      for line in out:gmatch("[^\n]+") do
        if line:find(" %-c engine/codec%.c ") then lines[#lines + 1] = line end
      end
      assert.equal(1, #lines, "no single compile of engine/codec.c in make -n " .. args .. ":\n" .. out)
      return lines[1]
    end
    assert.truthy(cc_lines("all"):find(" -Werror ", 1, true))
    assert.falsy(cc_lines("install"):find("-Werror", 1, true))
    assert.truthy(cc_lines("install DEV=1"):find(" -Werror ", 1, true))
  end)
end)

describe("make docs (LDoc, config.ld)", function()
  after_each(support.cleanup)

  -- every function and value the module gives, and every method of the
  -- handles it makes, with the names LDoc gives them (module page -> names)
  local function api()
    local want = { ["moraine"] = {}, ["moraine.handles"] = {} }
    for k in pairs(moraine) do want["moraine"][#want["moraine"] + 1] = k end
    local function methods(prefix, obj)
      local idx = getmetatable(obj).__index
      assert.is_table(idx, prefix .. " has no method table")
      for k in pairs(idx) do want["moraine.handles"][#want["moraine.handles"] + 1] = prefix .. ":" .. k end
    end
    local dir = support.tmpdir("api")
    local db = moraine.open(dir, { no_sync = true })
    db:init()
    methods("db", db)
    db:commit(nil, function(tx) methods("staged", tx) end)
    db:transaction(function(tx) methods("tx", tx) end)
    db:read(function(rd) methods("rd", rd) end)
    db:close()
    -- every module of bindings/moraine/ and its folders (moraine.cli.*): each
    -- field that is not private (_VERSION)
    local p = assert(io.popen("cd bindings && find moraine -name '*.lua' | sort"))
    for f in p:lines() do
      local name = assert(f:match("^(.-)%.lua$"), f):gsub("/", ".")
      want[name] = {}
      for k in pairs(require(name)) do
        if not k:find("^_") then want[name][#want[name] + 1] = k end
      end
    end
    p:close()
    assert.is_table(want["moraine.http"])
    local m = require("moraine.progress").meter({ label = "x", write = function() end })
    for k in pairs(getmetatable(m).__index) do
      if not k:match("^__") then table.insert(want["moraine.progress"], "Meter:" .. k) end
    end
    return want
  end

  it("writes a page per module listing every public function and method, with its parameters", function()
    local out = support.tmpdir("docs")
    local ok, log, err = sh("ldoc -c config.ld -d " .. q(out) .. " .")
    assert(ok, log .. err)
    assert.falsy((log .. err):find("not found", 1, true), log .. err)        -- a missing file or Markdown processor
    assert.falsy((log .. err):find("cannot be parsed", 1, true), log .. err)
    for page, names in pairs(api()) do
      local html = support.read(out .. "/modules/" .. page .. ".html")
      local missing = {}
      for _, name in ipairs(names) do
        if not html:find('<a name = "' .. name .. '"></a>', 1, true) then missing[#missing + 1] = name end
      end
      table.sort(missing)
      assert.are.same({}, missing, page)
    end
    -- parameters are listed: rd:scan_json's signature and its options
    local handles = support.read(out .. "/modules/moraine.handles.html")
    assert.truthy(handles:find("rd:scan_json (name[, opts])", 1, true))
    assert.truthy(handles:find('<span class="parameter">opts</span>', 1, true))
  end)

  it("keeps underscores inside names (Discount, not markdown.lua's emphasis)", function()
    local out = support.tmpdir("docs")
    local ok, log, err = sh("ldoc -c config.ld -d " .. q(out) .. " .")
    assert(ok, log .. err)
    -- LDoc's discount format falls back to markdown.lua with this line
    assert.falsy((log .. err):find("built-in markdown", 1, true), log .. err)
    local p = assert(io.popen("cd " .. q(out) .. " && ls modules/*.html index.html"))
    local mangled = {}
    for page in p:lines() do
      local html = support.read(out .. "/" .. page)
      for word in html:gmatch("[%w_]*%w</?em>%w[%w_]*") do mangled[#mangled + 1] = page .. ": " .. word end
    end
    p:close()
    assert.are.same({}, mangled)
    -- rd:files_batch's text and its return value's code span
    local handles = support.read(out .. "/modules/moraine.handles.html")
    assert.truthy(handles:find("merged by data_file_id", 1, true))
    assert.truthy(handles:find("<code>partition_values</code>", 1, true))
    assert.truthy(handles:find("<code>{n = files, file = {column = array, ...},", 1, true))
  end)
end)

describe("README.md", function()
  it("names every file of docs/, the licence, the changelog and the man page in its documentation list", function()
    local readme = support.read("README.md")
    local list = assert(readme:match("\n## Documentation\n(.-)\n## "), "README.md has no Documentation section")
    local p = assert(io.popen("ls docs"))
    local names = { "LICENSE", "CHANGELOG.md", "moraine.1" }
    for f in p:lines() do names[#names + 1] = "docs/" .. f end
    p:close()
    assert.is_true(#names > 3, "docs/ is empty")
    local missing = {}
    for _, n in ipairs(names) do
      if not list:find("(" .. n .. ")", 1, true) then missing[#missing + 1] = n end
    end
    assert.are.same({}, missing)
  end)
end)

describe("temporary files", function()
  it("C tests make their directories under $TMPDIR (check_mkdtemp), never a fixed /tmp path", function()
    local p = assert(io.popen("grep -l '\"/tmp/' tests/c/*.c tests/crash/*.c 2>/dev/null"))
    local offenders = p:read("*a")
    p:close()
    assert.equal("", offenders)
  end)
end)
