-- Entry point: see lib/save_run.lua (prepended to this file, after lib/args.lua and
-- lib/announce.lua). Arguments: save_run's, by name.
return save_run(KEYS, named(), false)
