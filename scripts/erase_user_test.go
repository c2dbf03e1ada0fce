// Package scripts holds the repository's operational shell scripts; its
// tests run them against fakes of the tools they call.
package scripts

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeAWS is an `aws` command for the test: it appends its argv (as a JSON
// array) to $FAKE_AWS_LOG, and answers `dynamodb query` and `dynamodb
// delete-item` from the tables in $FAKE_AWS_STATE ({"table": [item, …]}),
// reading the JSON arguments as the AWS CLI would (a repeated member name
// keeps its last value, as Python's json does). With $FAKE_AWS_FOREIGN set,
// a query also answers every other user's items, which DynamoDB never does.
const fakeAWS = `#!/usr/bin/env bash
set -euo pipefail
jq -cn '$ARGS.positional' --args -- "$@" >>"$FAKE_AWS_LOG"
[ "$1" = dynamodb ] || { echo "fake aws: $1" >&2; exit 2; }
op=$2; shift 2
table= values='{}' names='{}' key= cond=
while [ $# -gt 0 ]; do
  case $1 in
    --table-name) table=$2; shift 2 ;;
    --expression-attribute-values) values=$2; shift 2 ;;
    --expression-attribute-names) names=$2; shift 2 ;;
    --key) key=$2; shift 2 ;;
    --condition-expression) cond=$2; shift 2 ;;
    --key-condition-expression|--projection-expression|--query|--output) shift 2 ;;
    --consistent-read) shift ;;
    *) echo "fake aws: unexpected argument $1" >&2; exit 2 ;;
  esac
done
case $op in
  query)
    jq -c --arg t "$table" --argjson v "$values" --argjson n "$names" --arg all "${FAKE_AWS_FOREIGN:-}" '
      [.[$t][] | select($all != "" or .user_id.S == $v[":u"].S) | {user_id} + {($n["#s"]): .[$n["#s"]]}]' "$FAKE_AWS_STATE" ;;
  delete-item)
    [ "$cond" = "attribute_not_exists(user_id) OR user_id = :u" ] || { echo "fake aws: delete without the condition" >&2; exit 2; }
    if ! jq -e --argjson k "$key" --argjson v "$values" '$k.user_id.S == $v[":u"].S' -n >/dev/null; then
      echo "An error occurred (ConditionalCheckFailedException)" >&2; exit 254
    fi
    jq --arg t "$table" --argjson k "$key" '.[$t] |= map(select(. as $i | [$k | to_entries[] | $i[.key] == .value] | all | not))' \
      "$FAKE_AWS_STATE" >"$FAKE_AWS_STATE.new"
    mv "$FAKE_AWS_STATE.new" "$FAKE_AWS_STATE" ;;
  *) echo "fake aws: dynamodb $op" >&2; exit 2 ;;
esac
`

// evil is a sub that, pasted into JSON text, ends the user's string and
// names another user: {":u":{"S":"alice"},":u":{"S":"bob"}} is bob.
const evil = `alice"},":u":{"S":"bob`

type item map[string]map[string]string

func items(user string, sortKey string, sorts ...string) []item {
	var out []item
	for _, s := range sorts {
		out = append(out, item{"user_id": {"S": user}, sortKey: {"S": s}, "payload": {"S": "x"}})
	}
	return out
}

// runErase runs erase-user.sh for evil with a fake aws on PATH, and returns
// the tables after it and every argv the fake saw.
func runErase(t *testing.T, foreign bool) (map[string][]item, [][]string, error) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("jq is not installed; CI must install it (apt-get install -y jq)")
		}
		t.Skip("jq is not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "aws"), []byte(fakeAWS), 0o755); err != nil {
		t.Fatal(err)
	}
	state := map[string][]item{
		"ledger": append(items(evil, "key", "k1", "k2"), items("bob", "key", "k1", "k3")...),
		"events": append(items(evil, "event_id", "e1", "head"), items("bob", "event_id", "e1", "e2", "head")...),
	}
	statePath, logPath := filepath.Join(dir, "state.json"), filepath.Join(dir, "argv.log")
	b, _ := json.Marshal(state)
	if err := os.WriteFile(statePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "erase-user.sh", evil, "ledger", "events")
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_AWS_STATE="+statePath, "FAKE_AWS_LOG="+logPath)
	if foreign {
		cmd.Env = append(cmd.Env, "FAKE_AWS_FOREIGN=1")
	}
	out, runErr := cmd.CombinedOutput()
	t.Logf("erase-user.sh: %s", out)
	after := map[string][]item{}
	b, err := os.ReadFile(statePath)
	if err == nil {
		err = json.Unmarshal(b, &after)
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls [][]string
	logged, _ := os.ReadFile(logPath)
	for line := range strings.Lines(string(logged)) {
		var argv []string
		if err := json.Unmarshal([]byte(line), &argv); err != nil {
			t.Fatalf("argv line %q: %v", line, err)
		}
		calls = append(calls, argv)
	}
	return after, calls, runErr
}

// arg is the value after flag in argv.
func arg(argv []string, flag string) string {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// wantBobIntact: bob's items are all there, and the evil sub's are gone.
func wantBobIntact(t *testing.T, after map[string][]item) {
	t.Helper()
	count := func(table, user string) int {
		n := 0
		for _, it := range after[table] {
			if it["user_id"]["S"] == user {
				n++
			}
		}
		return n
	}
	if count("ledger", "bob") != 2 || count("events", "bob") != 3 {
		t.Errorf("bob's items were touched: %v", after)
	}
	if count("ledger", evil) != 0 || count("events", evil) != 0 {
		t.Errorf("the erased user's items remain: %v", after)
	}
}

// TestEraseUserWithAQuoteInTheSub: every JSON value the script hands the AWS
// CLI carries the sub whole, as one string; the user's items go and a second
// user's stay.
func TestEraseUserWithAQuoteInTheSub(t *testing.T) {
	after, calls, err := runErase(t, false)
	if err != nil {
		t.Fatalf("erase-user.sh: %v", err)
	}
	ops := map[string]int{}
	for _, argv := range calls {
		ops[argv[1]]++
		var values map[string]map[string]string
		if err := json.Unmarshal([]byte(arg(argv, "--expression-attribute-values")), &values); err != nil ||
			len(values) != 1 || len(values[":u"]) != 1 || values[":u"]["S"] != evil {
			t.Errorf("%s: --expression-attribute-values %q is not {\":u\":{\"S\":<the sub>}} (%v)", argv[1], arg(argv, "--expression-attribute-values"), err)
		}
		if argv[1] == "delete-item" {
			var key item
			if err := json.Unmarshal([]byte(arg(argv, "--key")), &key); err != nil || key["user_id"]["S"] != evil || len(key) != 2 {
				t.Errorf("delete-item --key %q", arg(argv, "--key"))
			}
		}
	}
	if ops["query"] != 2 || ops["delete-item"] != 4 {
		t.Errorf("calls %v, want 2 queries and 4 deletes", ops)
	}
	wantBobIntact(t, after)
}

// TestEraseUserDeletesNoForeignItem: should a query answer hold another
// user's items (DynamoDB's would not; a wrong tool or recipe might), the
// script deletes none of them.
func TestEraseUserDeletesNoForeignItem(t *testing.T) {
	after, calls, err := runErase(t, true)
	if err != nil {
		t.Fatalf("erase-user.sh: %v", err)
	}
	for _, argv := range calls {
		if argv[1] == "delete-item" && !strings.Contains(arg(argv, "--key"), `alice\"`) {
			t.Errorf("a delete of another user's item: %q", arg(argv, "--key"))
		}
	}
	wantBobIntact(t, after)
}
