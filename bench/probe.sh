#!/usr/bin/env bash
# Probes of the issue's failure cases against a running server (default http://127.0.0.1:8070):
# prints each request and the status it got. Usage: bench/probe.sh [base-url] (needs a tenant
# token in $TOKEN and its username/password in $LOGIN_USER/$LOGIN_PASSWORD for the login probes).
set -uo pipefail
BASE="${1:-http://127.0.0.1:8070}"
auth=(-H "Authorization: Token $TOKEN")
code() { curl -s -o /tmp/probe.body -w "%{http_code}" "$@"; }
for p in series fairness prices; do
  echo "GET /api/market/$p/?resource=%00 -> $(code "${auth[@]}" "$BASE/api/market/$p/?resource=%00") $(head -c 80 /tmp/probe.body)"
done
python3 -c "print('{\"budget\": \"1\", \"work\": ' + '['*100000 + ']'*100000 + '}')" > /tmp/probe.deep
echo "POST /api/jobs/ 100,000 nested brackets -> $(code "${auth[@]}" -H 'Content-Type: application/json' --data-binary @/tmp/probe.deep "$BASE/api/jobs/") $(head -c 80 /tmp/probe.body)"
head -c 300000 /dev/zero | tr '\0' 'x' > /tmp/probe.big
echo "POST /api/jobs/ 300 kB body -> $(code "${auth[@]}" -H 'Content-Type: application/json' --data-binary @/tmp/probe.big "$BASE/api/jobs/") $(head -c 80 /tmp/probe.body)"
for b in '١٢' '1_000' ' 5 '; do
  echo "POST /api/jobs/ budget \"$b\" -> $(code "${auth[@]}" -H 'Content-Type: application/json' --data "{\"budget\": \"$b\", \"work\": [{\"resource_type\": \"map\", \"tasks\": 1, \"task_duration\": 5}]}" "$BASE/api/jobs/") $(head -c 100 /tmp/probe.body)"
done
key="probe-$RANDOM$RANDOM"
bid='{"budget": "3", "work": [{"resource_type": "map", "tasks": 1, "task_duration": 5}]}'
for n in 1 2; do
  echo "POST /api/jobs/ with Idempotency-Key (#$n) -> $(code "${auth[@]}" -H 'Content-Type: application/json' -H "Idempotency-Key: $key" --data "$bid" -D /tmp/probe.h "$BASE/api/jobs/") $(head -c 40 /tmp/probe.body) replayed=$(grep -ci idempotent-replayed /tmp/probe.h)"
done
echo "POST /api/jobs/ same key, other body -> $(code "${auth[@]}" -H 'Content-Type: application/json' -H "Idempotency-Key: $key" --data '{"budget": "4", "work": [{"resource_type": "map", "tasks": 1, "task_duration": 5}]}' "$BASE/api/jobs/")"
codes=""; for _ in $(seq 1 100); do codes+="$(code -H "Authorization: Token wrong$RANDOM" "$BASE/api/account/") "; done
echo "100 wrong tokens -> $(echo $codes | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"
codes=""; for _ in $(seq 1 30); do codes+="$(code -d "username=${LOGIN_USER}&password=wrong" "$BASE/api/auth/token/") "; done
echo "30 wrong passwords at /api/auth/token/ -> $(echo $codes | tr ' ' '\n' | sort | uniq -c | tr '\n' ' ')"
