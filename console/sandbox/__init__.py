"""The sandbox: a local implementation of the Browser Automation Service (see docs/sandbox.md)."""
