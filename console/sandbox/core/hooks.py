"""What a lower wing of the sandbox needs from a higher one, handed in rather than imported.

Imports run down (core <- chromium <- resources <- the app): core and chromium never import a resource.
Where they need one (the store saving a resource's objects, the engine telling the files API of a
download, a request's audit entry), they name what they need as a hook, and ``app.assemble`` hands the
resource's function in at start-up. A hook nobody handed in fails loudly when called, never silently.
"""

from __future__ import annotations

from collections.abc import Callable


class NotHandedIn(RuntimeError):
    """A hook was called before ``console.sandbox.app.assemble()`` handed its function in."""


class Hook:
    """Exactly one function, handed in by a higher wing; calling the hook calls it."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._function: Callable | None = None

    def hand_in(self, function: Callable) -> None:
        self._function = function

    @property
    def handed_in(self) -> bool:
        return self._function is not None

    def __call__(self, *args, **kwargs):
        if self._function is None:
            raise NotHandedIn(
                f"{self.what}: not handed in (console.sandbox.app.assemble() wires the sandbox)"
            )
        return self._function(*args, **kwargs)


class Listeners:
    """Any number of functions told of one event, in the order they were handed in."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._functions: tuple[Callable, ...] | None = None

    def hand_in(self, *functions: Callable) -> None:
        """The listeners, all of them: handing in again replaces them (``assemble`` may run twice)."""
        self._functions = functions

    def __call__(self, *args, **kwargs) -> None:
        if self._functions is None:
            raise NotHandedIn(
                f"{self.what}: not handed in (console.sandbox.app.assemble() wires the sandbox)"
            )
        for function in self._functions:
            function(*args, **kwargs)
