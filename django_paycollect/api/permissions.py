"""Who may call what: a customer their own payments; staff each operation behind its model permission.

Authentication is the project's (``REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]``: sessions with CSRF,
tokens, JWT...). The permissions are the app's own, on purpose: a project-wide default such as ``AllowAny``
must never open another customer's payments or a refund to a customer.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rest_framework.permissions import BasePermission


class IsCustomer(BasePermission):
    """Any signed-in user; what they may see is narrowed to their own payments by the views."""

    def has_permission(self, request: Any, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated)


class StaffPermission(BasePermission):
    """A staff user holding ``perm`` (``app_label.codename``): what the admin asks for the same act."""

    perm: ClassVar[str] = ""

    def has_permission(self, request: Any, view: Any) -> bool:
        user = request.user
        return bool(user and user.is_authenticated and user.is_staff and user.has_perm(self.perm))


def staff_with(perm: str) -> type[StaffPermission]:
    """A :class:`StaffPermission` for one permission (``"paycollect.refund_transaction"``)."""
    return type(f"StaffWith_{perm.replace('.', '_')}", (StaffPermission,), {"perm": perm})


CAN_REFUND = staff_with("paycollect.refund_transaction")
CAN_CAPTURE = staff_with("paycollect.capture_transaction")
CAN_CANCEL_SERIES = staff_with("paycollect.cancel_recurringseries")
CAN_ADD_DIRECT_ORDER = staff_with("paycollect.add_directorder")
CAN_VIEW_DIRECT_ORDER = staff_with("paycollect.view_directorder")
