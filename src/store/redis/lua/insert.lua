-- Entry point: see lib/insert_question.lua (prepended to this file).
return insert_question(KEYS, ARGV)
