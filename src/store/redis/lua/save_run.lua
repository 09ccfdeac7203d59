-- Entry point: see lib/save_run.lua (prepended to this file, after lib/announce.lua).
return save_run(KEYS, ARGV, false)
