"""The chat page at GET / of the server, end to end in headless Chromium (Debian's, driven by Playwright): served
without a key under a Content-Security-Policy, talking to this server only; a message streamed back as the server's
greedy answer; the stop button; Markdown rendered safely; errors shown; and the key asked for where one is needed."""

from __future__ import annotations

import json
import time

import httpx
import pytest
from server_helpers import MODEL, running_server
from test_explorer_fixtures import chromium, needs_chromium

pytestmark = needs_chromium

KEY = "sk-page-key"
STORED_KEY = "localStorage.getItem('forwardpass.apiKey')"
LAST_REPLY = "[...document.querySelectorAll('.message.assistant .content')].at(-1)"
RENDER = "async text => (await import('/page/markdown.js')).render(text)"


@pytest.fixture(scope="module")
def server(smollm):
    with running_server(smollm) as (url, engine):
        yield url, engine


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def open_chat(browser):
    """open_chat(url, state="idle", width=1000, routes={}): the page, once body[data-state] is `state`; `routes`
    answer some paths in the browser instead (pattern → Playwright handler). page.errors: console errors;
    page.external: requests to another origin; page.chats: the bodies POSTed to /v1/chat/completions."""
    contexts = []

    def opened(url: str, state: str = "idle", width: int = 1000, routes: dict | None = None):
        context = browser.new_context(viewport={"width": width, "height": 800})
        contexts.append(context)
        page = context.new_page()
        page.errors, page.external, page.chats = [], [], []
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.errors.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith(url + "/") else page.external.append(r.url))
        page.on("request", lambda r: page.chats.append(r) if r.url.endswith("/v1/chat/completions") else None)
        for pattern, handler in (routes or {}).items():
            page.route(pattern, handler)
        page.goto(url + "/")
        wait_state(page, state)
        return page

    yield opened
    for context in contexts:
        context.close()


# (wait_for_function is given functions only: an expression would be eval'd, which the page's policy forbids)
def wait_state(page, state: str, timeout: float = 30_000) -> None:
    page.wait_for_function("s => document.body.dataset.state === s", arg=state, timeout=timeout)


def settings(page, **fields) -> None:
    if not page.locator("#settings").evaluate("d => d.open"):
        page.click("#settings summary")
    for name, value in fields.items():
        page.fill(f"#{name}", str(value))


def say(page, text: str, timeout: float = 120_000) -> None:
    """`text` typed and sent with Enter; returns once the reply has ended."""
    page.fill("#input", text)
    page.press("#input", "Enter")
    page.wait_for_function("() => document.querySelector('.message.assistant') && document.body.dataset.state !== "
                           "'streaming'", timeout=timeout)


def greedy(url: str, messages: list, max_tokens: int) -> str:
    body = {"model": MODEL, "messages": messages, "temperature": 0, "max_tokens": max_tokens}
    r = httpx.post(url + "/v1/chat/completions", json=body, timeout=120)
    return r.json()["choices"][0]["message"]["content"]


def test_the_page_is_served_under_a_policy_and_stays_on_the_server(server, open_chat):
    url, _ = server
    r = httpx.get(url + "/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    policy = r.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "unsafe-inline" not in policy and "<script>" not in r.text
    assert httpx.get(url + "/page/chat.js").headers["content-type"].startswith("text/javascript")
    for path in ("/page/missing.js", "/page/..%2Fpage.py", "/nowhere"):  # unknown paths answer as before
        r = httpx.get(url + path)
        assert r.status_code == 404 and r.json()["error"]["message"].startswith("no route GET"), path
    assert [m["id"] for m in httpx.get(url + "/v1/models").json()["data"]] == [MODEL]

    for width in (1000, 390):
        page = open_chat(url, width=width)
        assert page.locator("#model option").all_inner_texts() == [MODEL]
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")  # nothing runs off a narrow page
        assert page.locator("#input").is_visible() and page.locator("#send").is_visible()
        assert page.errors == [] and page.external == []


def test_a_message_streams_the_servers_greedy_reply_and_the_conversation_goes_on(server, open_chat):
    url, _ = server
    page = open_chat(url)
    settings(page, temperature=0, max_tokens=24)
    page.evaluate(f"""() => {{  // each distinct text the reply shows, as it arrives
        window.shown = [];
        new MutationObserver(() => {{
            const text = {LAST_REPLY}?.textContent;
            if (text && window.shown.at(-1) !== text) window.shown.push(text);
        }}).observe(document.getElementById('messages'), {{childList: true, subtree: true, characterData: true}});
    }}""")
    question = "What is the capital of France?"
    say(page, question)

    assert page.chats[0].post_data_json == {"model": MODEL, "messages": [{"role": "user", "content": question}],
                                            "temperature": 0, "max_tokens": 24, "stream": True}  # top_p left out
    assert len(page.evaluate("window.shown")) > 1  # it grew as it arrived
    want = greedy(url, [{"role": "user", "content": question}], 24)
    assert want and page.evaluate(f"{LAST_REPLY}.innerHTML") == page.evaluate(RENDER, want)

    settings(page, system="Answer briefly.", max_tokens=4)
    say(page, "And of Italy?")
    assert page.chats[1].post_data_json["messages"] == [
        {"role": "system", "content": "Answer briefly."}, {"role": "user", "content": question},
        {"role": "assistant", "content": want}, {"role": "user", "content": "And of Italy?"}]
    assert page.locator(".message.assistant").count() == 2 and page.locator(".message .error").count() == 0

    page.click("#new-chat")
    assert page.locator(".message").count() == 0
    assert page.errors == [] and page.external == []


def test_stop_ends_a_long_reply_and_the_server_goes_on(server, open_chat):
    url, engine = server
    page = open_chat(url)
    settings(page, temperature=0, max_tokens=2000)
    page.fill("#input", "Count from 1 to 1000, one number per line.")
    page.press("#input", "Enter")
    page.wait_for_function(f"() => {LAST_REPLY}?.textContent.length > 0", timeout=120_000)
    assert page.locator("#stop").is_visible() and not page.locator("#send").is_visible()

    start = time.monotonic()
    page.click("#stop")
    wait_state(page, "idle", timeout=5_000)
    assert time.monotonic() - start < 2
    assert page.locator(".message.assistant .note").last.inner_text() == "Stopped."
    deadline = time.monotonic() + 5
    while engine.has_work():  # the engine let the request go
        assert time.monotonic() < deadline, "the stopped request is still running"
        time.sleep(0.05)

    settings(page, max_tokens=4)
    say(page, "Thanks.")  # the server still answers, with the stopped reply in the conversation
    assert page.evaluate(f"{LAST_REPLY}.textContent").strip()
    assert len(page.chats[1].post_data_json["messages"]) == 3 and page.locator(".message .error").count() == 0
    assert page.errors == []


MARKDOWN = """## Steps
Run **this** and *that*, with `x < y` inline.

- first [docs](https://example.com/a_b?q=1&r=2)
- second [bad](javascript:alert(1)) [worse](javascript:alert`1`)

1. one
2. two

```python
if a < b and "c":
    print('<b>')
```
<script>window.pwned = 1</script> <img src=x onerror="window.pwned = 1"> <a href="javascript:alert(1)">x</a>"""

INSPECT = """async text => {
    const box = document.createElement('div');
    box.innerHTML = (await import('/page/markdown.js')).render(text);
    document.body.append(box);
    await new Promise(r => setTimeout(r, 100));  // an injected handler would have run by now
    const all = [...box.querySelectorAll('*')];
    return {
        tags: [...new Set(all.map(e => e.tagName.toLowerCase()))].sort(),
        attributes: [...new Set(all.flatMap(e => [...e.attributes].map(a => a.name)))].sort(),
        code: [...box.querySelectorAll('pre > code')].map(c => [c.className, c.textContent]),
        links: [...box.querySelectorAll('a')].map(a => [a.textContent, a.getAttribute('href')]),
        heading: box.querySelector('h2')?.textContent, strong: box.querySelector('strong')?.textContent,
        em: box.querySelector('em')?.textContent, inline: box.querySelector('p code')?.textContent,
        items: [...box.querySelectorAll('li')].map(li => li.textContent), text: box.textContent,
        pwned: window.pwned ?? null,
    };
}"""


def test_markdown_is_rendered_safely(server, open_chat):
    page = open_chat(server[0])
    out = page.evaluate(INSPECT, MARKDOWN)
    assert out["tags"] == ["a", "code", "em", "h2", "li", "ol", "p", "pre", "strong", "ul"]
    assert out["attributes"] == ["class", "href", "rel", "target"]
    assert out["code"] == [["language-python", "if a < b and \"c\":\n    print('<b>')"]]
    assert out["links"] == [["docs", "https://example.com/a_b?q=1&r=2"]]  # javascript: is no link
    assert (out["heading"], out["strong"], out["em"], out["inline"]) == ("Steps", "this", "that", "x < y")
    assert out["items"][1].startswith("second [bad](javascript:alert(1))") and out["items"][2:] == ["one", "two"]
    assert '<script>window.pwned = 1</script> <img src=x onerror="window.pwned = 1">' in out["text"]
    assert out["pwned"] is None and page.errors == []


def sse(*events: dict | str) -> str:
    return "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)


def test_failures_are_shown_in_the_page(server, open_chat):
    url, _ = server
    listed = {"object": "list", "data": [{"id": "chat-a", "object": "model"}, {"id": "minilm", "kind": "embedding"},
                                         {"id": "chat-b", "object": "model", "type": "chat"}]}
    answers = [  # what the next requests get, in the browser
        {"status": 200, "content_type": "text/event-stream", "body": sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {"content": "<img src=x onerror=alert(1)> part"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "abort"}]},
            {"error": {"message": "the request ran past the server's time limit", "code": "timeout"}}, "[DONE]")},
        {"status": 400, "json": {"error": {"message": "temperature must be at most 2", "type": "invalid_request"}}},
        {"status": 200, "content_type": "text/event-stream", "body": sse(
            {"choices": [{"index": 0, "delta": {"content": "cut"}, "finish_reason": None}]})},  # no [DONE]
    ]
    page = open_chat(url, routes={"**/v1/models": lambda route: route.fulfill(json=listed),
                                  "**/v1/chat/completions": lambda route: route.fulfill(**answers.pop(0))})
    assert page.locator("#model option").all_inner_texts() == ["chat-a", "chat-b"]  # the embedding model is left out

    say(page, "hello")
    reply = page.locator(".message.assistant").last
    assert reply.locator(".content").inner_text() == "<img src=x onerror=alert(1)> part"
    assert "ran past the server's time limit" in reply.locator(".error").inner_text()
    assert page.locator("#messages img").count() == 0

    settings(page, temperature=5)
    say(page, "again")
    assert page.locator(".message.assistant").last.locator(".error").inner_text() == "temperature must be at most 2"
    assert page.locator(".message.user").last.get_attribute("class") == "message user unanswered"
    assert page.input_value("#input") == "again"  # to send again

    say(page, "once more")
    assert "ended before the server finished" in page.locator(".message.assistant").last.locator(".error").inner_text()
    assert [c.post_data_json["model"] for c in page.chats] == ["chat-a"] * 3
    assert [e for e in page.errors if "400" not in e] == [] and page.external == []


def test_a_model_that_could_not_be_loaded_is_marked_with_why(server, open_chat):
    url, _ = server
    listed = {"object": "list", "data": [
        {"id": "a", "object": "model", "status": "loaded"},
        {"id": "t", "object": "model", "status": "failed", "error": "t.gguf: truncated GGUF file"}]}
    page = open_chat(url, routes={"**/v1/models": lambda route: route.fulfill(json=listed)})
    assert page.locator("#model option").all_inner_texts() == ["a", "t (could not be loaded)"]
    assert page.locator("#model option").nth(1).get_attribute("title") == "t.gguf: truncated GGUF file"
    assert page.input_value("#model") == "a" and page.errors == []


def test_a_server_with_a_key_asks_for_it(smollm, open_chat):
    with running_server(smollm, api_key=KEY, default_max_tokens=4) as (url, _):
        assert httpx.get(url + "/").status_code == 200 and httpx.get(url + "/page/chat.js").status_code == 200
        assert httpx.get(url + "/v1/models").status_code == 401
        page = open_chat(url, state="needs-key")
        assert page.locator("#key-form").is_visible() and page.locator("#model option").count() == 0

        page.fill("#key", "sk-wrong")
        page.press("#key", "Enter")
        page.wait_for_function("() => document.getElementById('key-error').textContent !== ''")
        wait_state(page, "needs-key")
        page.fill("#key", KEY)
        page.press("#key", "Enter")
        wait_state(page, "idle")
        assert page.locator("#model option").all_inner_texts() == [MODEL] and not page.locator("#key-form").is_visible()
        assert page.evaluate(STORED_KEY) == KEY

        say(page, "Hi")
        assert page.evaluate(f"{LAST_REPLY}.textContent").strip()
        assert page.chats[0].headers["authorization"] == f"Bearer {KEY}"
        page.reload()  # the key is kept
        wait_state(page, "idle")
        assert [e for e in page.errors if "401" not in e] == [] and page.external == []
