"""GBNF grammars (llama.cpp's format), converted by llguidance's own converter: the greedy output is a whole match
through the engine, the server's `grammar` field (as llama-server takes it) and `--grammar-file`; a grammar that
does not compile is a 400 naming `grammar`, or one line naming the file, before PyTorch is imported."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import httpx
import pytest
from cli_helpers import in_process
from server_helpers import MODEL, openai_fixtures

from forwardpass.errors import ConstraintError
from forwardpass.loop import generate
from forwardpass.sampling import SamplingParams
from forwardpass.structured.constraints import Constraint, Grammars

YES_NO = 'root ::= "yes" | "no"'
# a character class, bounded repetition and a rule reference: three numbers of 1 to 3 digits
NUMBERS = 'root ::= num ("," num){2}\nnum ::= [0-9]{1,3}'
MATCHES_NUMBERS = r"[0-9]{1,3}(,[0-9]{1,3}){2}"
ASK = [{"role": "user", "content": "Is water wet? Answer yes or no."}]
COUNT = "Three numbers: "


server, client = openai_fixtures()  # the module's server on SmolLM2, and the openai client on it


def greedy(smollm, prompt, constraint: Constraint):
    return generate(smollm, prompt, SamplingParams(temperature=0, max_tokens=24, constraint=constraint))


def test_a_gbnf_grammar_holds_through_the_engine(smollm):
    """The text is a whole match, ended by the grammar; and the same as the equivalent regular expression gives
    (the conversion keeps the language)."""
    r = greedy(smollm, smollm.tokenizer.apply_chat_template(ASK), Constraint("gbnf", YES_NO))
    assert (r.text, r.stop_reason) == ("yes", "stop")
    r = greedy(smollm, COUNT, Constraint("gbnf", NUMBERS))
    assert re.fullmatch(MATCHES_NUMBERS, r.text) and r.stop_reason == "stop"
    assert r.text == "2,4,678" == greedy(smollm, COUNT, Constraint("regex", MATCHES_NUMBERS)).text
    inline = greedy(smollm, COUNT, Constraint("gbnf", 'root ::= [0-9]{1,3} ("," [0-9]{1,3}){2}'))
    assert inline.text == r.text


def test_unicode_escapes_are_their_characters(smollm):
    """llama.cpp's \\u and \\U escapes, in literals and classes, mean their characters (an escaped backslash before
    a `u` stays a backslash)."""
    lark = Constraint("gbnf", r'root ::= [\u00e0-\u00ff] "\u0041\U0001F600" "\\u0041"').lark().splitlines()[2]
    assert lark == r'start: /[à-ÿ]/ "\x41😀" "\\u0041"'
    r = greedy(smollm, "I ordered a", Constraint("gbnf", r'root ::= " caf\u00e9" | " th\u00e9"'))
    assert r.text in (" café", " thé") and r.stop_reason == "stop"


@pytest.mark.parametrize("grammar,text", [
    ('root ::= start\nstart ::= "yes" | "no"', "yes"),  # the converter's own name for root
    ('root ::= a-b a_b\na-b ::= "x"\na_b ::= "y"', "xy"),  # one name once `-` is `_`
    ('root ::= Num num fooBar foo_bar\nNum ::= "1"\nnum ::= "2"\nfooBar ::= "3"\nfoo_bar ::= "4"', "1234"),
    ('root ::= 1st\n1st ::= "ok"', "ok"),  # a name a Lark rule cannot have
    ('root ::= ' + "(" * 60 + '"yes"' + ")" * 60, "yes"),  # groups of one, as deep as it likes
])
def test_rule_names_llama_cpp_accepts_are_kept_apart(smollm, grammar, text):
    r = greedy(smollm, smollm.tokenizer.apply_chat_template(ASK), Constraint("gbnf", grammar))
    assert (r.text, r.stop_reason) == (text, "stop")


def test_a_long_chain_of_rules_converts_in_linear_time():
    """The converter's search for rules made only of terminals swept every rule once per rule in a chain."""
    chain = "root ::= r0\n" + "".join(f'r{i} ::= "a" r{i + 1}\n' for i in range(5999)) + 'r5999 ::= "a"\n'
    start = time.perf_counter()
    lark = Constraint("gbnf", chain).lark()
    assert time.perf_counter() - start < 3 and "R5998: \"a\" R5999" in lark


@pytest.mark.parametrize("grammar,message", [
    ('root ::= "a"\nbad line', "invalid GBNF grammar: Expected ::= at line 2"),
    ("root ::= num", "invalid GBNF grammar: Rule 'num' not found"),
    ('answer ::= "yes"', "invalid GBNF grammar: No 'root' rule found"),
    ('root ::= "a', "invalid GBNF grammar: Unexpected end of input at line 1"),
    # past the converter, the library's complaint, with the converted rule it is about (its line is not the client's)
    ("root ::= [z-a]", "invalid character class range, the start must be <= the end (in the rule converted to Lark "
                       "as `start: /[z-a]/`)"),
    ("", "a GBNF grammar must be a non-empty string"),
    # past the limits: refused before the converter and the library, at the line where it passes them
    ('root ::= "a"\n' + "".join(f'r{i} ::= "a" "b"\n' for i in range(7000)),
     "GBNF grammar is past the limit of 20,000 symbols (rules, references, literals, character classes and groups) "
     "at line 6,668"),
    ("root ::= " + "(" * 101 + '"a"' + ")" * 101, "GBNF grammar nests groups more than 100 deep at line 1"),
])
def test_a_gbnf_grammar_that_does_not_compile_is_refused(smollm, grammar, message):
    with pytest.raises(ConstraintError) as caught:
        Grammars(smollm.tokenizer, smollm.config.vocab_size).compile(Constraint("gbnf", grammar))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_grammar_field_through_the_openai_client(client, smollm):
    """llama-server's `grammar` on chat (streamed or not) and completions: the same text as the engine's."""
    kw = {"model": MODEL, "messages": ASK, "max_tokens": 24, "temperature": 0}
    c = client.chat.completions.create(**kw, extra_body={"grammar": YES_NO}).choices[0]
    assert (c.message.content, c.finish_reason) == ("yes", "stop")
    streamed = client.chat.completions.create(**kw, extra_body={"grammar": YES_NO}, stream=True)
    assert "".join(ch.choices[0].delta.content or "" for ch in streamed if ch.choices) == "yes"
    r = client.completions.create(model=MODEL, prompt=COUNT, max_tokens=24, temperature=0,
                                  extra_body={"grammar": NUMBERS}).choices[0]
    assert re.fullmatch(MATCHES_NUMBERS, r.text) and r.finish_reason == "stop"
    assert r.text == greedy(smollm, COUNT, Constraint("gbnf", NUMBERS)).text
    # a response_format of type text constrains nothing, and "" is no grammar (as llama-server reads it)
    same = client.completions.create(model=MODEL, prompt=COUNT, max_tokens=24, temperature=0,
                                     extra_body={"grammar": NUMBERS, "response_format": {"type": "text"}})
    assert same.choices[0].text == r.text
    free = client.completions.create(model=MODEL, prompt=COUNT, max_tokens=6, temperature=0)
    empty = client.completions.create(model=MODEL, prompt=COUNT, max_tokens=6, temperature=0,
                                      extra_body={"grammar": ""})
    assert empty.choices[0].text == free.choices[0].text and not re.fullmatch(MATCHES_NUMBERS, free.choices[0].text)


SCHEMA = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
TOOL = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("path,extra,param,message", [
    ("/v1/chat/completions", {"grammar": 'root ::= "a"\nbad line'}, "grammar",
     "invalid GBNF grammar: Expected ::= at line 2"),
    ("/v1/completions", {"grammar": "root ::= [z-a]"}, "grammar", "invalid character class range"),
    ("/v1/completions", {"grammar": "root ::= num"}, "grammar", "Rule 'num' not found"),
    ("/v1/chat/completions", {"grammar": YES_NO, "response_format": SCHEMA}, "grammar",
     "give response_format or grammar, not both"),
    ("/v1/completions", {"grammar": YES_NO, "structured_outputs": {"regex": "a+"}}, "grammar",
     "give structured_outputs or grammar, not both"),
    ("/v1/completions", {"grammar": YES_NO, "structured_outputs": {"regex": "a+"}, "response_format": SCHEMA},
     "grammar", "give one of response_format, structured_outputs and grammar, not 3"),
    ("/v1/chat/completions", {"grammar": YES_NO, "tools": TOOL}, "grammar", "grammar and tools cannot apply together"),
])
def test_a_bad_grammar_is_a_400_naming_it(server, path, extra, param, message):
    body = ({"messages": ASK} if path.endswith("chat/completions") else {"prompt": COUNT}) | {"max_tokens": 4}
    r = httpx.post(server + path, json=body | extra, timeout=60)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert (error["param"], error["code"]) == (param, "invalid_constraint") and message in error["message"], error


def test_a_grammar_of_tens_of_thousands_of_alternatives_is_a_fast_400(server):
    alternatives = "root ::= " + " | ".join(f'"a{i}"' for i in range(78000))
    start = time.perf_counter()
    r = httpx.post(server + "/v1/chat/completions", json={"messages": ASK, "grammar": alternatives}, timeout=60)
    assert r.status_code == 400 and time.perf_counter() - start < 5, r.text
    error = r.json()["error"]
    assert error["param"] == "grammar" and "past the limit of 20,000 symbols" in error["message"], error


def test_a_grammar_that_is_not_text_is_refused_by_name(server):
    r = httpx.post(server + "/v1/completions", json={"prompt": COUNT, "grammar": 5}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "grammar", r.text


@pytest.fixture(scope="module")
def cli():
    with in_process() as run:
        yield run


def test_grammar_file_on_generate_and_chat(tmp_path, cli):
    (tmp_path / "numbers.gbnf").write_text(NUMBERS + "\n")
    (tmp_path / "yes_no.gbnf").write_text(YES_NO + "\n")
    r = cli("generate", COUNT, "--grammar-file", str(tmp_path / "numbers.gbnf"), "--max-tokens", "24")
    assert r.returncode == 0 and re.fullmatch(MATCHES_NUMBERS + "\n", r.stdout), r.stdout + r.stderr
    r = cli("chat", "--grammar-file", str(tmp_path / "yes_no.gbnf"), "--json", stdin=ASK[0]["content"] + "\n")
    assert r.returncode == 0, r.stderr
    (turn,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert re.fullmatch("yes|no", turn["assistant"]) and turn["stop_reason"] == "stop", turn


PROBE = """
import sys
from forwardpass.cli import main
code = main(sys.argv[1:])
print("torch" in sys.modules, code)
"""


@pytest.mark.parametrize("text,said", [
    (None, "--grammar-file: cannot read {path}: No such file or directory"),
    ('root ::= "a"\nbad line\n', "--grammar-file {path}: invalid GBNF grammar: Expected ::= at line 2"),
    ("root ::= [z-a]\n", "--grammar-file {path}: invalid GBNF grammar: invalid regex"),
    # 200,000 alternatives: refused in a moment by the count of symbols, not by the library's internal limit
    ("root ::= " + " | ".join(f'"w{i}"' for i in range(200000)) + "\n",
     "--grammar-file {path}: GBNF grammar is past the limit of 20,000 symbols"),
])
def test_a_grammar_file_that_cannot_be_is_one_line_before_the_model(tmp_path, text, said):
    """Refused while the options are read: exit 2, one line naming the file (and the line where the converter says
    it), and PyTorch never imported."""
    path = tmp_path / "g.gbnf"
    if text is not None:
        path.write_text(text)
    r = subprocess.run([sys.executable, "-c", PROBE, "generate", "hi", "--grammar-file", str(path)],
                       capture_output=True, text=True, timeout=30)
    assert r.stdout.split() == ["False", "2"], r.stdout + r.stderr
    assert r.stderr.startswith("forwardpass: error: " + said.format(path=path)) and r.stderr.count("\n") == 1, r.stderr
