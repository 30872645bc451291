#!/usr/bin/env python3
"""Loads Kubernetes manifests (JSON files) into the official Python client's
models, strictly: every field must be one the API's model knows, with the
right type, and required fields present. Exit 1 with the reasons otherwise.

Usage: validate-k8s.py FILE...
"""
import json
import sys

from kubernetes import client
from kubernetes.client import ApiClient

MODELS = {
    ("batch/v1", "Job"): "V1Job",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("networking.k8s.io/v1", "NetworkPolicy"): "V1NetworkPolicy",
}


def unknown_fields(data, model_name, path):
    """Fields of `data` the model `model_name` does not have, recursively."""
    if model_name is None or data is None:
        return []
    if model_name.startswith("list["):
        inner = model_name[5:-1]
        return [p for i, item in enumerate(data) for p in unknown_fields(item, inner, f"{path}[{i}]")]
    if model_name.startswith("dict("):
        inner = model_name[5:-1].split(", ", 1)[1]
        return [p for k, v in data.items() for p in unknown_fields(v, inner, f"{path}.{k}")]
    model = getattr(client, model_name, None)
    if model is None:  # a primitive: str, int, object ...
        return []
    if not isinstance(data, dict):
        return [f"{path}: expected an object for {model_name}, got {type(data).__name__}"]
    by_json = {v: k for k, v in model.attribute_map.items()}
    problems = []
    for key, value in data.items():
        if key not in by_json:
            problems.append(f"{path}.{key}: no such field in {model_name}")
            continue
        problems += unknown_fields(value, model.openapi_types[by_json[key]], f"{path}.{key}")
    return problems


def main(paths):
    api = ApiClient()
    # Strict: the models check required fields and enum values on creation.
    api.configuration.client_side_validation = True
    problems = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        model_name = MODELS.get((data.get("apiVersion"), data.get("kind")))
        if model_name is None:
            problems.append(f"{path}: unexpected kind {data.get('apiVersion')}/{data.get('kind')}")
            continue
        problems += [f"{path}: {p}" for p in unknown_fields(data, model_name, "")]
        try:
            obj = api._ApiClient__deserialize(data, model_name)
        except Exception as e:  # noqa: BLE001 - any refusal is a finding
            problems.append(f"{path}: {model_name} refused it: {e}")
            continue
        # Round trip: what the model serializes back is what was written.
        back = api.sanitize_for_serialization(obj)
        if back != data:
            problems.append(f"{path}: does not round-trip through {model_name}")
        print(f"{path}: {model_name} ok")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
