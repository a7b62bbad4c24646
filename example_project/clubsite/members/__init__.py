"""Memberships and invoices of the club: what a merchant builds on django-paycollect."""
