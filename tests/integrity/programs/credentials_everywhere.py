"""A program for the credential scan: credentials of many kinds in every place a bundle,
a view, an export or a message could catch them (tests/integrity/test_credential_scan.py).

Credentials travel in the environment (captured variables), the command line, HTTP headers,
the query string, prompts (URLs with passwords, signed-URL parameters, tokens of every
shape), a tool's arguments, a tool's result (a declared value inside a credential query
parameter) and stdout.
"""

import os
import sys

from openai import OpenAI

import symtrace

ENV = os.environ


@symtrace.tool
def login(user: str, api_token: str, password: str, secret: str) -> str:
    # what the program receives back: a declared value inside a credential query parameter
    return f"/data?key={ENV['RESULT_SECRET']}&user={user}"


def main(argv: list[str]) -> int:
    client = OpenAI(max_retries=0, default_query={"api_key": ENV["QUERY_KEY"]},
                    default_headers={"X-Api-Token": ENV["HEADER_TOKEN"]})
    prompt = " ".join([
        "Connect to", ENV["DATABASE_URL"], "through", ENV["UPSTREAM_PROXY"],
        "then fetch https://bucket.s3.amazonaws.com/report.csv?X-Amz-Security-Token="
        + ENV["AMZ_SESSION"] + "&X-Amz-Signature=" + ENV["AMZ_SIGNATURE"] + "&X-Amz-Date=1",
        "and finish https://app.example/callback?code=" + ENV["OAUTH_CODE"] + "&state=42",
        "with", ENV["SESSION_JWT"], "Bearer " + ENV["BEARER_VALUE"], ENV["GITHUB_PAT_VALUE"],
        ENV["AWS_KEY_ID_VALUE"], ENV["SLACK_VALUE"], ENV["OTHER_SK"],
        "https://api.example/v1?access_token=" + ENV["ACCESS_VALUE"],
        "client_secret=" + ENV["CLIENT_SECRET_VALUE"], "service", ENV["MY_SERVICE_TOKEN"],
    ])
    first = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompt}]).choices[0].message.content
    where = login("bob", api_token=ENV["TOOL_TOKEN"], password=ENV["TOOL_PASSWORD"],
                  secret=ENV["TOOL_SECRET"])
    second = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": f"{first} at {where}"}],
    ).choices[0].message.content
    print("db", ENV["DATABASE_URL"], "argv", " ".join(argv), "got", where, flush=True)
    symtrace.final_result(second)
    expected = f"/data?key={ENV['RESULT_SECRET']}&user=bob"
    return 0 if where == expected and f"--password={ENV['ARGV_PASSWORD']}" in argv else 7


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
