-- Entry point: see lib/save_run.lua (prepended to this file).
return save_run(KEYS, ARGV, false)
