"""One LLM call through the openai SDK, then a network action chosen by argv[1]:

  none               nothing more
  socket HOST PORT   open a TCP connection (a program's own local service) and read a line
  urllib             POST a chat completion with urllib.request (around every seam)
  urandom            print entropy symtrace does not capture
"""

import json
import os
import socket
import sys
import urllib.request

from openai import OpenAI

action = sys.argv[1] if len(sys.argv) > 1 else "none"
client = OpenAI(max_retries=0)
reply = client.chat.completions.create(
    model="m", messages=[{"role": "user", "content": "hello"}]).choices[0].message.content
print("LLM:", reply, flush=True)

if action == "socket":
    host, port = sys.argv[2], int(sys.argv[3])
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as conn:
        conn.settimeout(5)
        try:
            conn.connect((host, port))
            print("SERVICE:", conn.recv(64).decode().strip(), flush=True)
        except ConnectionRefusedError as exc:  # swallowed: the replay must still fail
            print("SERVICE: refused", type(exc).__name__, flush=True)
elif action == "urllib":
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "side"}]})
    req = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=body.encode(),
        headers={"content-type": "application/json", "authorization": "Bearer sk-test"})
    with urllib.request.urlopen(req, timeout=10) as response:
        print("SIDE:", json.load(response)["choices"][0]["message"]["content"], flush=True)
elif action == "urandom":
    print("TOKEN:", os.urandom(8).hex(), flush=True)
print("DONE", flush=True)
