"""askbridge: ask a person a question on their chat channels and go on with the answer.

>>> from askbridge import Client, Declined
>>> with Client() as client:
...     version = client.ask("Which version goes out?", ["1.4", "1.5"])

Outcomes are explicit: an answer, or :class:`Declined`, :class:`TimedOut`, :class:`Cancelled`
raised (all :class:`NoAnswer`); failures are :class:`AskbridgeError`.
"""

from ._async import AsyncClient
from ._core import AskOptions, DecisionReply
from ._sync import Client
from .actions import ActionDecision, BatchAction, ProposedAction
from .approval import require_approval
from .errors import (
    ApiError,
    AskbridgeError,
    Cancelled,
    Declined,
    NoAnswer,
    Rejected,
    TimedOut,
    Unreachable,
)
from .forms import schema_of
from .models import (
    Action,
    AnswerValue,
    Approval,
    AuditEntry,
    Decision,
    Event,
    Question,
    Resolution,
    Rule,
    Run,
    Vote,
)

__all__ = [
    "Action",
    "ActionDecision",
    "AnswerValue",
    "ApiError",
    "Approval",
    "AskOptions",
    "AskbridgeError",
    "AsyncClient",
    "AuditEntry",
    "BatchAction",
    "Cancelled",
    "Client",
    "Decision",
    "DecisionReply",
    "Declined",
    "Event",
    "NoAnswer",
    "ProposedAction",
    "Question",
    "Rejected",
    "Resolution",
    "Rule",
    "Run",
    "TimedOut",
    "Unreachable",
    "Vote",
    "require_approval",
    "schema_of",
]
