-- Entry point: see lib/insert_question.lua (prepended to this file, after lib/announce.lua).
return insert_question(KEYS, ARGV)
