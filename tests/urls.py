from django.contrib import admin
from django.urls import include, path

from django_paycollect.reporting.metrics import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("paycollect/", include("django_paycollect.urls")),
    # Mounted as docs/finance-and-operations.md says (the tests install the metrics extra).
    path("metrics/", metrics_view),
]
