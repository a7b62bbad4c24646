"""The history of the app's transactions, as a project keeps it with django-simple-history."""

from simple_history import register

from django_paycollect.models import Transaction

register(Transaction, app="tests.receivers")
