"""What the template checks share: the SAM translator run as CloudFormation
would run it, and a check that prints its verdict and counts failures."""
import copy
import os

from samtranslator.translator.transform import transform

os.environ.setdefault("AWS_DEFAULT_REGION", "eu-west-1")
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class NoManagedPolicies:
    def load(self):
        return {}


def translate(template, params):
    t = copy.deepcopy(template)
    # The translator wants code in S3; sam deploy uploads it there.
    for r in t["Resources"].values():
        if r["Type"] == "AWS::Serverless::Function":
            r["Properties"]["CodeUri"] = "s3://bucket/bootstrap.zip"
    return transform(t, params, NoManagedPolicies())
