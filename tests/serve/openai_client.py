#!/usr/bin/env python3
"""openai_client.py BASE_URL API_KEY MODEL MAX_TOKENS -- the official `openai` package
against the server: completions and chat, streamed and not, usage counted, the error
classes of 404 and 400."""
import sys
import openai

base, key, model, mt = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = openai.OpenAI(base_url=base, api_key=key, max_retries=0, timeout=60)
fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


ids = [m.id for m in c.models.list().data]
check(ids == [model], "models.list: %s" % ids)
r = c.completions.create(model=model, prompt="The paged attention kernel", max_tokens=mt, n=2)
check(len(r.choices) == 2 and r.usage.completion_tokens == 2 * mt and r.choices[0].finish_reason == "length",
      "completions: 2 choices, usage %s" % r.usage)
r = c.completions.create(model=model, prompt=[11, 12, 13, 14, 15], max_tokens=mt)
check(r.usage.prompt_tokens == 5 and r.usage.completion_tokens == mt, "completions, token ids: usage %s" % r.usage)
text, last, usage = "", None, None
for ch in c.completions.create(model=model, prompt="Hello", max_tokens=mt, stream=True, stream_options={"include_usage": True}):
    if ch.choices:
        text += ch.choices[0].text
        last = ch.choices[0].finish_reason
    if ch.usage:
        usage = ch.usage
check(last == "length" and usage is not None and usage.completion_tokens == mt and len(text) > 0,
      "completions, streamed: %d chars, usage %s" % (len(text), usage))
r = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "Say hi"}], max_tokens=mt)
check(r.choices[0].message.role == "assistant" and r.usage.completion_tokens == mt, "chat: usage %s" % r.usage)
parts, usage = [], None
for ch in c.chat.completions.create(model=model, messages=[{"role": "system", "content": "Be brief."},
                                                          {"role": "user", "content": "Say hi"}],
                                    max_tokens=mt, stream=True, stream_options={"include_usage": True}):
    if ch.choices and ch.choices[0].delta.content is not None:
        parts.append(ch.choices[0].delta.content)
    if ch.usage:
        usage = ch.usage
check(len(parts) == mt and usage is not None and usage.completion_tokens == mt, "chat, streamed: %d deltas, usage %s" % (len(parts), usage))
try:
    c.completions.create(model="no-such-model", prompt="x", max_tokens=1)
    check(False, "unknown model raises NotFoundError")
except openai.NotFoundError:
    check(True, "unknown model raises NotFoundError")
try:
    c.completions.create(model=model, prompt="x", max_tokens=10 ** 6)
    check(False, "too long raises BadRequestError")
except openai.BadRequestError:
    check(True, "too long raises BadRequestError")
try:
    openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
    check(False, "wrong key raises AuthenticationError")
except openai.AuthenticationError:
    check(True, "wrong key raises AuthenticationError")
print("openai %s: %d failure(s)" % (openai.__version__, len(fails)))
sys.exit(1 if fails else 0)
