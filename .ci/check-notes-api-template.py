"""Transform examples/notes-api/template.yaml with the SAM translator (what
CloudFormation will build) and check what it generates: the three routes,
each behind the JWT authorizer and none matching OPTIONS; the function's
role grants the DynamoDB actions a transaction of its writes needs, on
the two tables only; the ledger table has its TTL.

Run with the CI venv's python: python3 .ci/check-notes-api-template.py examples/notes-api/template.yaml
"""
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

actions = set()
for r in resources.values():
    if r["Type"] != "AWS::IAM::Role":
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

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("notes-api template: every check passed")
