"""Transform template.yaml with the SAM translator (what CloudFormation
will build) and check the resources it generates, not the template's intent:

- no route that runs the JWT authorizer matches OPTIONS, so API Gateway's CORS
  configuration answers every browser preflight;
- CorsAllowOrigins with several comma-separated origins is a list of them;
- the API invokes the function's "live" alias, and CodeDeploy shifts it with
  the error alarms as rollback triggers, canary for a stack named prod;
- stage throttling, tracing and reserved concurrency are wired to their
  parameters, and the role grants no logs:* or CloudWatch Logs on "*";
- the access log records no source IP, header or token;
- the edge (Edge=cloudfront-waf): CloudFront caches nothing, forwards every
  header but Host to the API over HTTPS, caches no error, and is behind a
  CLOUDFRONT web ACL whose rate rules key on the client IP and on the
  Authorization header and answer 429; no WAF sample keeps a request's
  headers; the web ACL is made only in us-east-1, and none of it exists
  with Edge=none;
- live sync: one event source mapping, from the events table's stream to
  the poke function, filtered to head writes, its retries bounded
  (retention's, the other, made only with EventRetentionDays above 0); the Event
  API takes the HTTP API's issuer and audiences to connect and subscribe,
  IAM alone to publish, and no API key.

Run with the CI venv's python: python3 .ci/check-template.py template.yaml
"""
import json
import sys

from samtranslator.yaml_helper import yaml_parse

from samcheck import check, failures, translate

ORIGINS = ["https://app.example.com", "https://admin.example.com"]


def evaluate(value, params, conditions):
    """The value CloudFormation computes for the intrinsics used here."""
    if isinstance(value, list):
        return [evaluate(v, params, conditions) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1 or not next(iter(value)).startswith(("Ref", "Fn::")):
        return {k: evaluate(v, params, conditions) for k, v in value.items()}
    (fn, arg), = value.items()
    if fn == "Ref":
        return params.get(arg, {"Ref": arg})
    if fn == "Fn::Split":
        return evaluate(arg[1], params, conditions).split(arg[0])
    if fn == "Fn::If":
        return evaluate(arg[1] if conditions[arg[0]] else arg[2], params, conditions)
    if fn == "Fn::Sub" and isinstance(arg, list):
        text = arg[0]
        for k, v in arg[1].items():
            text = text.replace("${" + k + "}", evaluate(v, params, conditions))
        return text
    return value


def main(path):
    template = yaml_parse(open(path).read())
    params = {"JwtIssuer": "https://issuer.example.com", "JwtAudience": "client-1", "CorsAllowOrigins": ",".join(ORIGINS)}
    out = translate(template, params)
    res = out["Resources"]
    by_type = lambda t: {k: v for k, v in res.items() if v["Type"] == t}

    # Routes: in the API's OpenAPI body for an HttpApi, and as Route resources
    # if any are generated.
    api = by_type("AWS::ApiGatewayV2::Api")["HttpApi"]["Properties"]
    body = api["Body"]
    authorized_options = []
    for route, methods in body["paths"].items():
        for method, op in methods.items():
            if method in ("options", "x-amazon-apigateway-any-method") and op.get("security", body.get("security")):
                authorized_options.append(f"{method} {route}")
    for name, r in by_type("AWS::ApiGatewayV2::Route").items():
        key = r["Properties"].get("RouteKey", "")
        if key == "$default" or key.split(" ")[0] in ("ANY", "OPTIONS"):
            authorized_options.append(f"{name}: {key}")
    check(not authorized_options, f"no route matching OPTIONS reaches the authorizer {authorized_options or ''}")
    for path in ("/api/v1/sync/events", "/api/v1/sync/events/batch"):
        methods = sorted(m.upper() for m in body["paths"].get(path, {}))
        check(methods == sorted(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]), f"{path} has explicit routes {methods}")
    check("/{proxy+}" in body["paths"], "a catch-all path gives other paths the API's JSON 404")
    unauthorized = [f"{m} {p}" for p, ms in body["paths"].items() for m, op in ms.items() if not op.get("security")]
    check(not unauthorized, f"every route runs the JWT authorizer {unauthorized or ''}")

    def cors_of(origins):
        p = dict(params, CorsAllowOrigins=origins)
        b = translate(template, p)["Resources"]["HttpApi"]["Properties"]["Body"]
        return evaluate(b.get("x-amazon-apigateway-cors"), p, {"HasCorsOrigins": origins != ""})

    cors = cors_of(",".join(ORIGINS))
    check(isinstance(cors, dict) and cors.get("allowOrigins") == ORIGINS,
          f"two comma-separated CorsAllowOrigins become a list of two origins: {cors}")
    check(cors.get("allowMethods") == ["GET", "POST", "DELETE"] and "idempotency-key" in cors.get("allowHeaders", [])
          and "idempotent-replayed" in cors.get("exposeHeaders", []), "CORS keeps its methods and headers")
    one = cors_of(ORIGINS[0])
    check(one.get("allowOrigins") == ORIGINS[:1], f"one origin stays a list of one: {one.get('allowOrigins')}")
    check(cors_of("") == {"Ref": "AWS::NoValue"}, "no origins, no CORS configuration")

    uris = {op["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"] for ms in body["paths"].values() for op in ms.values()}
    check(all("${SyncEventsFunctionAliaslive}" in u for u in uris), "every route invokes the live alias")

    stage = by_type("AWS::ApiGatewayV2::Stage")
    settings = [s["Properties"].get("DefaultRouteSettings", {}) for s in stage.values()]
    check(settings == [{"ThrottlingBurstLimit": {"Ref": "ThrottlingBurstLimit"}, "ThrottlingRateLimit": {"Ref": "ThrottlingRateLimit"}}],
          f"the one stage throttles by the parameters: {settings}")

    fn = res["SyncEventsFunction"]["Properties"]
    check(fn.get("TracingConfig") == {"Mode": "Active"}, "tracing is active")
    rce = fn.get("ReservedConcurrentExecutions")
    check(evaluate(rce, {"ReservedConcurrency": "50"}, {"HasReservedConcurrency": True}) == "50"
          and evaluate(rce, {}, {"HasReservedConcurrency": False}) == {"Ref": "AWS::NoValue"},
          "reserved concurrency is the parameter, or unreserved when it is empty")

    groups = by_type("AWS::CodeDeploy::DeploymentGroup")
    check(len(groups) == 1, "one CodeDeploy deployment group")
    group = next(iter(groups.values()))["Properties"]
    alarms = sorted(a["Name"]["Ref"] for a in group["AlarmConfiguration"]["Alarms"])
    check(alarms == ["FunctionErrorsAlarm", "ServiceErrorsAlarm"] and group["AlarmConfiguration"]["Enabled"], f"rollback on {alarms}")
    for stack, deployment, want in (("prod", "Auto", "CodeDeployDefault.LambdaCanary10Percent5Minutes"),
                                    ("dev", "Auto", "CodeDeployDefault.LambdaAllAtOnce"),
                                    ("dev", "Linear10PercentEvery1Minute", "CodeDeployDefault.LambdaLinear10PercentEvery1Minute")):
        # The translator resolves a parameter's Ref to the value it is given
        # (CloudFormation gives it the stack's), so each type is translated.
        p = dict(params, DeploymentType=deployment)
        g = next(iter(v for v in translate(template, p)["Resources"].values() if v["Type"] == "AWS::CodeDeploy::DeploymentGroup"))
        conditions = {"AutoDeploymentType": deployment == "Auto", "IsProdStack": stack == "prod"}
        got = evaluate(g["Properties"]["DeploymentConfigName"], p, conditions)
        check(got == want, f"stack {stack}, DeploymentType {deployment}: {got}")

    role = res["SyncEventsFunctionRole"]["Properties"]
    check(not role.get("ManagedPolicyArns"), "the function's role has no managed policies (no AWSLambdaBasicExecutionRole)")
    statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
    for s in statements:
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        if any(a.startswith("logs:") for a in actions):
            check(s["Resource"] == {"Fn::GetAtt": ["FunctionLogGroup", "Arn"]} and "logs:*" not in actions,
                  f"logging is scoped to the function's log group: {actions} on {s['Resource']}")
        elif s["Resource"] == "*":
            check(all(a.startswith("xray:") for a in actions), f"only X-Ray's actions are on '*': {actions}")

    log_format = next(iter(stage.values()))["Properties"]["AccessLogSettings"]["Format"]
    leaks = [f for f in ("sourceIp", "identity.", "authorizer.claims", "header", "user") if f in log_format]
    check(not leaks, f"the access log records no source IP, header, claim or user {leaks or ''}")

    check_edge(template, params)
    check_live(res)

    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


def check_retention_mapping(mappings):
    """Retention's mapping exists only with EventRetentionDays above 0, and
    reads the head writes of the events table's stream, batched."""
    check(len(mappings) == 1, f"one mapping feeds the retention function: {len(mappings)}")
    if not mappings:
        return
    r = mappings[0]
    m = r["Properties"]
    check(r.get("Condition") == "RetainEvents", f"retention's mapping is made only when events are to go: {r.get('Condition')}")
    check(m.get("EventSourceArn") == {"Fn::GetAtt": ["EventsTable", "StreamArn"]}, f"retention reads the events table's stream: {m.get('EventSourceArn')}")
    patterns = [json.loads(f["Pattern"]) for f in m.get("FilterCriteria", {}).get("Filters", [])]
    check(patterns == [{"eventName": ["INSERT", "MODIFY"], "dynamodb": {"Keys": {"event_id": {"S": ["head"]}}}}],
          f"retention's filter passes head writes only: {patterns}")
    check(m.get("MaximumBatchingWindowInSeconds") == 300 and m.get("BatchSize") == 1000,
          f"retention trims a busy stream once a 5-minute batch: {m.get('BatchSize')} {m.get('MaximumBatchingWindowInSeconds')}")


def check_sequencer_mapping(mappings):
    """The sequencer's mapping reads the accepted events' inserts of the
    events table's stream, at once, and splits a failed batch."""
    check(len(mappings) == 1, f"one mapping feeds the sequencer function: {len(mappings)}")
    if not mappings:
        return
    m = mappings[0]["Properties"]
    check(m.get("EventSourceArn") == {"Fn::GetAtt": ["EventsTable", "StreamArn"]}, f"the sequencer reads the events table's stream: {m.get('EventSourceArn')}")
    patterns = [json.loads(f["Pattern"]) for f in m.get("FilterCriteria", {}).get("Filters", [])]
    check(patterns == [{"eventName": ["INSERT"], "dynamodb": {"NewImage": {"received_key": {"S": [{"prefix": "-"}]}}}}],
          f"the sequencer's filter passes accepted events' inserts only: {patterns}")
    check(m.get("MaximumBatchingWindowInSeconds") == 0 and m.get("BisectBatchOnFunctionError") is True,
          f"the sequencer takes a batch at once and splits a failed one: {m.get('MaximumBatchingWindowInSeconds')} {m.get('BisectBatchOnFunctionError')}")


def check_sweep(res):
    """The sequencer's sweep: one EventBridge rule invokes the sequencer
    function every minute, with the permission to."""
    rules = [r["Properties"] for r in res.values() if r["Type"] == "AWS::Events::Rule"
             and any(t.get("Arn") == {"Fn::GetAtt": ["SequencerFunction", "Arn"]} for t in r["Properties"].get("Targets", []))]
    check(len(rules) == 1 and rules[0].get("ScheduleExpression") == "rate(1 minute)",
          f"one rule invokes the sequencer function every minute (its sweep): {[r.get('ScheduleExpression') for r in rules]}")
    perms = [r["Properties"] for r in res.values() if r["Type"] == "AWS::Lambda::Permission"
             and r["Properties"].get("FunctionName") == {"Ref": "SequencerFunction"} and r["Properties"].get("Principal") == "events.amazonaws.com"]
    check(len(perms) == 1, f"EventBridge may invoke the sequencer function: {len(perms)} permissions")


def check_live(res):
    """Live sync as CloudFormation builds it: the stream mapping that feeds
    the poke function, and the Event API's auth."""
    all_mappings = [r for r in res.values() if r["Type"] == "AWS::Lambda::EventSourceMapping"]
    check(len(all_mappings) == 3, f"three event source mappings (poke, retention, sequencer): {len(all_mappings)}")
    check_retention_mapping([r for r in all_mappings if r["Properties"].get("FunctionName") == {"Ref": "RetentionFunction"}])
    check_sequencer_mapping([r for r in all_mappings if r["Properties"].get("FunctionName") == {"Ref": "SequencerFunction"}])
    check_sweep(res)
    others = ({"Ref": "RetentionFunction"}, {"Ref": "SequencerFunction"})
    mappings = [r["Properties"] for r in all_mappings if r["Properties"].get("FunctionName") not in others]
    check(len(mappings) == 1, f"one event source mapping besides retention's and the sequencer's: {len(mappings)}")
    m = mappings[0] if mappings else {}
    check(m.get("EventSourceArn") == {"Fn::GetAtt": ["EventsTable", "StreamArn"]} and m.get("FunctionName") == {"Ref": "PokeFunction"},
          f"it feeds the events table's stream to the poke function: {m.get('EventSourceArn')} {m.get('FunctionName')}")
    patterns = [json.loads(f["Pattern"]) for f in m.get("FilterCriteria", {}).get("Filters", [])]
    check(patterns == [{"eventName": ["INSERT", "MODIFY"], "dynamodb": {"Keys": {"event_id": {"S": ["head"]}}}}],
          f"its one filter passes head writes only: {patterns}")
    check(m.get("MaximumRetryAttempts") == 3 and m.get("MaximumRecordAgeInSeconds") == 60 and m.get("StartingPosition") == "LATEST",
          f"a failed batch is retried 3 times, a record given up after a minute: {m.get('MaximumRetryAttempts')} {m.get('MaximumRecordAgeInSeconds')}")
    cfg = res["LiveApi"]["Properties"]["EventConfig"]
    oidc = [p for p in cfg["AuthProviders"] if p["AuthType"] == "OPENID_CONNECT"]
    check(len(oidc) == 1 and oidc[0]["OpenIDConnectConfig"]["Issuer"] == {"Ref": "JwtIssuer"}
          and oidc[0]["OpenIDConnectConfig"]["ClientId"] == {"Fn::Sub": ["^(${Audiences})$", {"Audiences": {"Fn::Join": ["|", {"Ref": "JwtAudience"}]}}]},
          "devices connect with the HTTP API's issuer and audiences, each matched whole")
    modes = lambda k: [a["AuthType"] for a in cfg[k]]
    check(modes("ConnectionAuthModes") == ["OPENID_CONNECT"] and modes("DefaultSubscribeAuthModes") == ["OPENID_CONNECT"]
          and modes("DefaultPublishAuthModes") == ["AWS_IAM"], "connect and subscribe by token, publish by IAM only")
    api_keys = [k for k, r in res.items() if r["Type"] == "AWS::AppSync::ApiKey"]
    check(not api_keys, f"no API key: {api_keys}")


CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"


def check_edge(template, params):
    on = dict(params, Edge="cloudfront-waf")
    res = translate(template, on)["Resources"]
    conds = template["Conditions"]
    check(conds["HasEdge"] == {"Fn::Equals": [{"Ref": "Edge"}, "cloudfront-waf"]}
          and template["Parameters"]["Edge"]["Default"] == "none", "the edge is off unless Edge=cloudfront-waf")
    edge = {k: v for k, v in res.items() if v["Type"] in ("AWS::CloudFront::Distribution", "AWS::WAFv2::WebACL")}
    check(sorted(edge) == ["EdgeDistribution", "EdgeWebAcl"]
          and res["EdgeDistribution"].get("Condition") == "HasEdge" and res["EdgeWebAcl"].get("Condition") == "CreateEdgeWebAcl",
          f"the edge's resources exist only under their conditions: {sorted((k, v.get('Condition')) for k, v in edge.items())}")

    dist = res["EdgeDistribution"]["Properties"]["DistributionConfig"]
    origin, = dist["Origins"]
    behavior = dist["DefaultCacheBehavior"]
    check(origin["DomainName"] == {"Fn::Sub": "${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"}
          and origin["CustomOriginConfig"]["OriginProtocolPolicy"] == "https-only", f"the one origin is the HTTP API over HTTPS: {origin}")
    check(behavior["CachePolicyId"] == CACHING_DISABLED and behavior["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST
          and not dist.get("CacheBehaviors"), "nothing is cached and every header but Host (Authorization included) reaches the API")
    check(sorted(behavior["AllowedMethods"]) == sorted(["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"])
          and behavior["ViewerProtocolPolicy"] == "https-only", f"every method, HTTPS only: {behavior['AllowedMethods']}")
    errors = {e["ErrorCode"]: e for e in dist.get("CustomErrorResponses", [])}
    check(sorted(errors) == [400, 403, 404, 405, 414, 416, 500, 501, 502, 503, 504]
          and all(e == {"ErrorCode": c, "ErrorCachingMinTTL": 0} for c, e in errors.items()),
          "no error answer is cached (CloudFront's default keeps one 10 s)")
    check(dist["WebACLId"] == {"Fn::If": ["CreateEdgeWebAcl", {"Fn::GetAtt": ["EdgeWebAcl", "Arn"]}, {"Ref": "EdgeWebAclArn"}]},
          "the distribution is behind the stack's web ACL, or the one given")

    acl = res["EdgeWebAcl"]["Properties"]
    rules = {r["Name"]: r for r in acl["Rules"]}
    check(acl["Scope"] == "CLOUDFRONT" and acl["DefaultAction"] == {"Allow": {}}, "a CLOUDFRONT web ACL that allows by default")

    def rate(name):
        r = rules.get(name, {})
        return r.get("Statement", {}).get("RateBasedStatement", {}), r.get("Action", {}).get("Block", {}).get("CustomResponse", {})

    ip, ip_answer = rate("RatePerIp")
    token, token_answer = rate("RatePerToken")
    check(ip.get("AggregateKeyType") == "IP" and ip.get("Limit") == {"Ref": "EdgeRateLimitPerIp"}, f"a rate rule per client IP: {ip}")
    keys = token.get("CustomKeys", [])
    check(token.get("AggregateKeyType") == "CUSTOM_KEYS" and token.get("Limit") == {"Ref": "EdgeRateLimitPerToken"}
          and len(keys) == 1 and keys[0].get("Header", {}).get("Name", "").lower() == "authorization",
          f"a rate rule per bearer token (the Authorization header): {token}")
    body = acl["CustomResponseBodies"].get(ip_answer.get("CustomResponseBodyKey"), {}).get("Content")
    check(ip_answer.get("ResponseCode") == 429 and token_answer == ip_answer and body == '{"message":"Too Many Requests"}',
          f"both answer API Gateway's own 429: {ip_answer} {body}")
    samples = [acl["VisibilityConfig"]["SampledRequestsEnabled"]] + [r["VisibilityConfig"]["SampledRequestsEnabled"] for r in acl["Rules"]]
    check(not any(samples), "no WAF sampled requests (a sample shows the Authorization header)")

    rule = template.get("Rules", {}).get("EdgeWebAclInUsEast1", {})
    check(rule.get("RuleCondition") == {"Fn::And": [{"Fn::Equals": [{"Ref": "Edge"}, "cloudfront-waf"]}, {"Fn::Equals": [{"Ref": "EdgeWebAclArn"}, ""]}]}
          and rule.get("Assertions", [{}])[0].get("Assert") == {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-1"]}
          and conds["CreateEdgeWebAcl"] == {"Fn::And": [{"Condition": "HasEdge"}, {"Fn::Equals": [{"Ref": "EdgeWebAclArn"}, ""]}]},
          "a stack that makes the web ACL must be in us-east-1 (a rule refuses it elsewhere)")


main(sys.argv[1] if len(sys.argv) > 1 else "template.yaml")
