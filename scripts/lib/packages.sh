# Sourced by scripts/test and scripts/bench: what each needs from Debian's packages, installed
# when missing. Each `need_*` adds to `need_apt` what is not there; `install_needed` installs it.
need_apt=()

# redis-server, with redis-benchmark (the benchmark's anchor; Debian ships both together).
need_redis() {
  command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || need_apt+=(redis-server)
  command -v redis-benchmark >/dev/null 2>&1 || need_apt+=(redis-server)
}

# The mail servers of the email tests and of the benchmark's email section: Postfix, and
# Dovecot's IMAP and LMTP.
need_mail_servers() {
  [ -x /usr/sbin/postfix ] || need_apt+=(postfix)
  [ -x /usr/sbin/dovecot ] && [ -e /usr/lib/dovecot/imap ] || need_apt+=(dovecot-imapd)
  [ -e /usr/lib/dovecot/lmtp ] || need_apt+=(dovecot-lmtpd)
}

install_needed() {
  [ ${#need_apt[@]} -gt 0 ] || return 0
  local unique
  mapfile -t unique < <(printf '%s\n' "${need_apt[@]}" | sort -u)
  echo "installing ${unique[*]} from Debian's packages" >&2
  local sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${unique[@]}" >/dev/null
}
