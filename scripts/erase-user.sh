#!/usr/bin/env bash
# Erase one user's items from both tables: the ledger records and the
# events, the user's head item (event_id "head") included. See
# docs/operations.md, "Erasing one user".
#
#   scripts/erase-user.sh <sub> <IdempotencyTableName> <EventsTableName>
#
# Needs the AWS CLI (credentials and region as for any aws command) and jq.
# The sub is handed to the AWS CLI only inside JSON that jq builds
# (jq --arg), never pasted into JSON text: a sub holding a quote stays one
# string and cannot name another user. Each delete is also conditional on
# the item's user_id being that sub, or on the item being gone already (a
# ledger record's TTL, or another run, may delete it between the query
# and the delete, and the erasure must not stop halfway).
set -euo pipefail

if [ $# -ne 3 ] || [ -z "$1" ]; then
  echo "usage: $0 <sub> <IdempotencyTableName> <EventsTableName>" >&2
  exit 2
fi
sub=$1 ledger=$2 events=$3
command -v jq >/dev/null || { echo "$0: needs jq" >&2; exit 1; }
command -v aws >/dev/null || { echo "$0: needs the AWS CLI (aws)" >&2; exit 1; }

# {":u":{"S":<sub>}}, built by jq: any character of the sub is escaped.
values=$(jq -cn --arg u "$sub" '{":u": {"S": $u}}')

# erase TABLE SORT_KEY: query the user's partition (the CLI follows every
# page), then delete each item by its key.
erase() {
  local table=$1 sort_key=$2 names keys key n=0
  names=$(jq -cn --arg s "$sort_key" '{"#s": $s}')
  keys=$(aws dynamodb query --table-name "$table" --consistent-read \
    --key-condition-expression 'user_id = :u' --expression-attribute-values "$values" \
    --projection-expression 'user_id, #s' --expression-attribute-names "$names" \
    --query 'Items[]' --output json |
    jq -c --arg u "$sub" '.[] | select(.user_id.S == $u)')
  while IFS= read -r key; do
    [ -n "$key" ] || continue
    aws dynamodb delete-item --table-name "$table" --key "$key" \
      --condition-expression 'attribute_not_exists(user_id) OR user_id = :u' --expression-attribute-values "$values"
    n=$((n + 1))
  done <<<"$keys"
  echo "$table: deleted $n items"
}

erase "$ledger" key
erase "$events" event_id
