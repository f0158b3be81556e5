"""BFCL's multi-turn APIs as a peer of the code-mode measurements (tests/support/bfcl_tasks.rs).

    bfcl_peer.py tasks DIR
        prints, one JSON object a line, each multi-turn base task of DIR (scripts/bfcl-data's
        folder) whose every turn has ground-truth calls: its id, the user's message of each
        turn, and each turn's calls with keyword arguments (positional ones named from the
        method's signature)
    bfcl_peer.py serve DIR TASK_ID RECORD
        a stdio MCP server (JSON-RPC, one message a line) whose tools are the functions of the
        task's APIs, with the schemas of their function docs, run by BFCL's own classes loaded
        with the task's initial configuration; after each call it rewrites RECORD with every
        call so far (name, arguments, result) and the APIs' state as BFCL's state checker sees
        it (each instance's attributes not starting with `_`)
"""

import ast
import copy
import importlib
import inspect
import json
import os
import sys

MODULES = {
    "GorillaFileSystem": "gorilla_file_system",
    "MathAPI": "math_api",
    "MessageAPI": "message_api",
    "TwitterAPI": "posting_api",
    "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot",
    "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control",
}
STATELESS = {"MathAPI"}
PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def instances(data, task):
    """The task's APIs, each loaded with its initial configuration, as BFCL's checker does."""
    sys.path.insert(0, os.path.join(data, "py"))
    out = {}
    for name in task["involved_classes"]:
        module = importlib.import_module(PACKAGE + "." + MODULES[name])
        instance = getattr(module, name)()
        if name not in STATELESS:
            config = copy.deepcopy(task["initial_config"].get(name, {}))
            instance._load_scenario(config, long_context=False)
        out[name] = instance
    return out


def methods(apis):
    return {
        method: getattr(instance, method)
        for instance in apis.values()
        for method, _ in inspect.getmembers(instance, predicate=inspect.ismethod)
        if not method.startswith("_")
    }


def plain(value, above=()):
    """A value as JSON: tuples are lists, an object its attributes, anything else not JSON its
    repr. An object already above (the file system's `parent`) is left out as `"<up>"`."""
    if isinstance(value, (list, tuple)):
        return [plain(v, above) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v, above) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "__dict__"):
        return "<up>" if any(value is a for a in above) else state_of(value, above)
    return repr(value)


def state_of(instance, above=()):
    above = above + (instance,)
    return {k: plain(v, above) for k, v in sorted(vars(instance).items())
            if not k.startswith("_")}


def call_of(source, functions):
    """`cd(folder='x')` as (name, keyword arguments)."""
    node = ast.parse(source, mode="eval").body
    name = node.func.id
    args = [ast.literal_eval(a) for a in node.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    bound = inspect.signature(functions[name]).bind(*args, **kwargs)
    return name, plain(dict(bound.arguments))


def tasks(data):
    questions = lines(os.path.join(data, "BFCL_v4_multi_turn_base.json"))
    answers = {a["id"]: a["ground_truth"] for a in lines(
        os.path.join(data, "possible_answer", "BFCL_v4_multi_turn_base.json"))}
    for task in questions:
        truth = answers[task["id"]]
        if not truth or any(not turn for turn in truth):
            continue
        functions = methods(instances(data, task))
        turns = []
        for messages, calls in zip(task["question"], truth):
            text = "\n".join(m["content"] for m in messages if m["role"] == "user")
            turns.append({"user": text, "calls": [
                {"name": n, "arguments": a} for n, a in (call_of(c, functions) for c in calls)]})
        print(json.dumps({"id": task["id"], "turns": turns}))


def schema(node):
    """A function doc's parameters as JSON Schema: BFCL writes `dict`, `float` and `tuple`."""
    if isinstance(node, list):
        return [schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: schema(v) for k, v in node.items()}
    kind = {"dict": "object", "float": "number", "tuple": "array", "any": None}
    if out.get("type") in kind:
        if kind[out["type"]] is None:
            del out["type"]
        else:
            out["type"] = kind[out["type"]]
    return out


def serve(data, task_id, record):
    task = next(t for t in lines(os.path.join(data, "BFCL_v4_multi_turn_base.json"))
                if t["id"] == task_id)
    apis = instances(data, task)
    functions = methods(apis)
    excluded = set(task.get("excluded_function") or [])
    tools = []
    for name in task["involved_classes"]:
        for doc in lines(os.path.join(data, "multi_turn_func_doc", MODULES[name] + ".json")):
            if doc["name"] in functions and doc["name"] not in excluded:
                tools.append({"name": doc["name"], "description": doc["description"],
                              "inputSchema": schema(doc["parameters"])})
    calls = []
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method = msg.get("method")
        if method == "initialize":
            result = {"protocolVersion": msg["params"]["protocolVersion"],
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": "bfcl", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            name, args = msg["params"]["name"], msg["params"].get("arguments") or {}
            # As BFCL's executor: text stays, a dict is its JSON, anything else its str().
            try:
                out = functions[name](**args)
                text = out if isinstance(out, str) else (
                    json.dumps(out) if isinstance(out, dict) else str(out))
            except Exception as e:
                text = "Error during execution: " + str(e)
            calls.append([name, args, text])
            with open(record + ".tmp", "w") as f:
                json.dump({"calls": calls,
                           "state": {k: state_of(v) for k, v in apis.items()}}, f)
            os.replace(record + ".tmp", record)
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1] == "tasks":
        tasks(sys.argv[2])
    else:
        serve(sys.argv[2], sys.argv[3], sys.argv[4])
