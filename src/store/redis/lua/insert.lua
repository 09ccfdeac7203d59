-- Entry point: see lib/insert_question.lua (prepended to this file, after lib/args.lua and
-- lib/announce.lua). Arguments: insert_question's, by name.
return insert_question(KEYS, named())
