"""A typed client of the Payment Collection Service, usable from plain Python (no Django needed).

>>> from decimal import Decimal
>>> from django_paycollect.client import PayCollectClient, BillingData
>>> client = PayCollectClient("https://service.example", api_key="...")
>>> envelope = client.pay(  # doctest: +SKIP
...     community_id="c-1", amount=Decimal("150.00"), original_amount=Decimal("150.00"),
...     variable_amount_id=12, billing_data=BillingData("Mona Ali", "mona@example.com", "+201001234567"),
... )
>>> envelope.result.iframe_url  # doctest: +SKIP
"""

from .client import OPERATIONS, Operation, PayCollectClient
from .envelope import CallInfo, Envelope, field_errors_from
from .errors import (
    ApiError,
    AuthenticationError,
    ConnectError,
    NotFoundError,
    OutcomeUnknownError,
    PayCollectError,
    RateLimitError,
    ServerError,
    UnexpectedResponseError,
    ValidationError,
)
from .money import MoneyError, format_amount, from_piasters, parse_amount, to_piasters
from .types import (
    APP_MODULES,
    CURRENCIES,
    CUSTOM_FIELD_TYPES,
    DEFAULT_CURRENCY,
    DEFAULT_PAY_USING,
    KNOWN_TRANSACTION_STATUSES,
    BillingData,
    CommunityCreated,
    CustomFieldDefinition,
    CustomFieldValue,
    DashboardStatistics,
    DirectOrderCreated,
    Logo,
    OperationMessage,
    PaymentStarted,
    PreparedAmount,
    PromocodeValidated,
    RecurringInfo,
    Tag,
    Transaction,
    TransactionStatus,
)

__all__ = [
    "APP_MODULES",
    "CURRENCIES",
    "CUSTOM_FIELD_TYPES",
    "DEFAULT_CURRENCY",
    "DEFAULT_PAY_USING",
    "KNOWN_TRANSACTION_STATUSES",
    "OPERATIONS",
    "ApiError",
    "AuthenticationError",
    "BillingData",
    "CallInfo",
    "CommunityCreated",
    "ConnectError",
    "CustomFieldDefinition",
    "CustomFieldValue",
    "DashboardStatistics",
    "DirectOrderCreated",
    "Envelope",
    "Logo",
    "MoneyError",
    "NotFoundError",
    "Operation",
    "OperationMessage",
    "OutcomeUnknownError",
    "PayCollectClient",
    "PayCollectError",
    "PaymentStarted",
    "PreparedAmount",
    "PromocodeValidated",
    "RateLimitError",
    "RecurringInfo",
    "ServerError",
    "Tag",
    "Transaction",
    "TransactionStatus",
    "UnexpectedResponseError",
    "ValidationError",
    "field_errors_from",
    "format_amount",
    "from_piasters",
    "parse_amount",
    "to_piasters",
]
