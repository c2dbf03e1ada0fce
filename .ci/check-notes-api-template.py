"""Transform examples/notes-api/template.yaml with the SAM translator (what
CloudFormation will build) and check what it generates: the three routes,
each behind the JWT authorizer and none matching OPTIONS; the function's
role grants the DynamoDB actions a transaction of its writes needs, on
the two tables only; the ledger table has its TTL. The outbox: the
ledger's stream feeds the effects function through an event source
mapping filtered to INSERT events, with batch item failures, bounded
retries and an on-failure destination that is an encrypted SQS queue,
alarmed on any message in it; the effects role's DynamoDB table actions
are exactly GetItem and UpdateItem on the ledger.

Run with the CI venv's python: python3 .ci/check-notes-api-template.py examples/notes-api/template.yaml
"""
import json
import sys

from samtranslator.yaml_helper import yaml_parse

from samcheck import check, failures, translate

with open(sys.argv[1]) as f:
    template = yaml_parse(f.read())
params = {"JwtIssuer": "https://issuer.example", "JwtAudience": "notes-app"}
out = translate(template, params)
resources = out["Resources"]

# An HttpApi becomes an AWS::ApiGatewayV2::Api whose OpenAPI body holds
# the routes, each with its security (the JWT authorizer) or none.
apis = [r for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Api"]
check(len(apis) == 1, "one HTTP API")
body = apis[0]["Properties"]["Body"]
routes = {f"{m.upper()} {p}": op for p, ms in body["paths"].items() for m, op in ms.items()}
want = {"POST /notes", "PATCH /notes/{id}", "DELETE /notes/{id}"}
check(want <= set(routes), f"the routes {sorted(want)} exist (got {sorted(routes)})")
check(all(routes[k].get("security", body.get("security")) for k in want & set(routes)), "each runs the JWT authorizer")
check(not any(k.startswith(("OPTIONS ", "X-AMAZON-APIGATEWAY-ANY-METHOD ")) for k in routes), "no route matches OPTIONS (CORS preflights)")

# The outbox's mapping, found first: its function's role is checked on
# its own below, the API function's role here.
mappings = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
check(len(mappings) == 1, f"one event source mapping, the outbox's (got {len(mappings)})")
esm = mappings[0] if mappings else {}
effects_fn = esm.get("FunctionName", {}).get("Ref")
effects_role = resources.get(effects_fn, {}).get("Properties", {}).get("Role", {}).get("Fn::GetAtt", [None])[0]

actions = set()
for name, r in resources.items():
    if r["Type"] != "AWS::IAM::Role" or name == effects_role:
        continue
    for policy in r["Properties"].get("Policies", []):
        for st in policy["PolicyDocument"]["Statement"]:
            acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
            if any(a.startswith("dynamodb:") for a in acts):
                actions.update(acts)
                check(st.get("Resource") != "*", f"DynamoDB actions {acts} name their tables, not *")
# A TransactWriteItems is authorised action by action: PutItem for the
# ledger record, and the notes' own Put, Update and Delete; GetItem reads a
# record or a note.
need = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:GetItem"}
check(need <= actions, f"the role grants {sorted(need)} (got {sorted(actions)})")
check(not any(a.endswith("*") for a in actions), "no DynamoDB wildcard action")

ttl = [r for r in resources.values() if r["Type"] == "AWS::DynamoDB::Table" and r["Properties"].get("TimeToLiveSpecification", {}).get("Enabled")]
check(len(ttl) >= 1, "the ledger table expires its records (TTL)")

# The outbox. The ledger is the table with the TTL; its stream feeds the
# mapping.
ledger = next((n for n, r in resources.items() if r in ttl), None)
stream = resources.get(ledger, {}).get("Properties", {}).get("StreamSpecification", {}).get("StreamViewType")
check(stream is not None, f"the ledger has a stream (got {stream})")
check(esm.get("EventSourceArn") == {"Fn::GetAtt": [ledger, "StreamArn"]}, "the mapping reads the ledger's stream")
patterns = [json.loads(f["Pattern"]) for f in esm.get("FilterCriteria", {}).get("Filters", [])]
check(patterns == [{"eventName": ["INSERT"]}], f"the mapping passes INSERT events only (got {patterns})")
check("ReportBatchItemFailures" in esm.get("FunctionResponseTypes", []), "the mapping takes batch item failures")
check(esm.get("StartingPosition") == "TRIM_HORIZON", "the mapping starts from the oldest record")
retries = esm.get("MaximumRetryAttempts", -1)
check(isinstance(retries, int) and 0 <= retries <= 10, f"the mapping's retries are bounded (got {retries})")
check(esm.get("BisectBatchOnFunctionError") is True, "the mapping bisects a batch whose invocation failed")
dest = esm.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination", {}).get("Fn::GetAtt", [None])
dlq = dest[0] if dest[1:] == ["Arn"] else None
queue = resources.get(dlq, {})
check(queue.get("Type") == "AWS::SQS::Queue", f"the on-failure destination is a queue of the stack (got {dest})")
qprops = queue.get("Properties", {})
check(qprops.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in qprops, "the dead-letter queue is encrypted")
alarms = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
on_dlq = [a for a in alarms if a.get("Namespace") == "AWS/SQS" and a.get("MetricName") == "ApproximateNumberOfMessagesVisible"
          and {"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}} in a.get("Dimensions", [])
          and a.get("Threshold") == 0 and a.get("ComparisonOperator") == "GreaterThanThreshold"]
check(len(on_dlq) == 1, "an alarm on any message visible in the dead-letter queue")

# The effects role: on the ledger's items GetItem (the record) and
# UpdateItem (an effect settled), nothing else, on nothing else; the
# stream's read actions on the ledger's stream; the queue's SendMessage.
table_acts, others = set(), []
for policy in resources.get(effects_role, {}).get("Properties", {}).get("Policies", []):
    for st in policy["PolicyDocument"]["Statement"]:
        acts = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        for a in acts:
            if a in ("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"):
                ok = st["Resource"] in ({"Fn::GetAtt": [ledger, "StreamArn"]}, {"Fn::Sub": "${" + ledger + ".Arn}/stream/*"})
                check(ok, f"the effects role's {a} is on the ledger's stream only (got {st['Resource']})")
            elif a.startswith("dynamodb:"):
                table_acts.add(a)
                check(st["Resource"] == {"Fn::GetAtt": [ledger, "Arn"]}, f"the effects role's {a} is on the ledger only (got {st['Resource']})")
            elif a.startswith("sqs:"):
                check(a == "sqs:SendMessage" and st["Resource"] == {"Fn::GetAtt": [dlq, "Arn"]}, f"the effects role's {a} is SendMessage to the dead-letter queue")
            else:
                others.append(a)
check(effects_role is not None, f"the effects function has a role of the stack (got {effects_role})")
check(table_acts == {"dynamodb:GetItem", "dynamodb:UpdateItem"}, f"the effects role's DynamoDB actions are exactly GetItem and UpdateItem (got {sorted(table_acts)})")
check(all(a.startswith("logs:") and not a.endswith("*") for a in others), f"the effects role grants nothing else but logs (got {others})")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("notes-api template: every check passed")
