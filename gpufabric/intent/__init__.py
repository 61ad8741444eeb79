"""The intent: loading, schema and cross-field validation of inventory/fabric.yml."""

from gpufabric.intent.errors import IntentError, Problem
from gpufabric.intent.loader import DEFAULT_FABRIC, LoadedIntent, load_intent, load_intent_text
from gpufabric.intent.model import Intent

__all__ = ["DEFAULT_FABRIC", "Intent", "IntentError", "LoadedIntent", "Problem", "load_intent", "load_intent_text"]
