from typing import Any

from rest_framework.pagination import PageNumberPagination


class CappedPageNumberPagination(PageNumberPagination):
    """``?page=N&page_size=M`` with the page size capped, so no list is unbounded."""

    page_size_query_param = "page_size"
    max_page_size = 500

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """The two parameters with their bounds, so a client (and schemathesis) knows them:
        a page beyond the last is a 404, a page size above the cap is the cap."""
        parameters = super().get_schema_operation_parameters(view)
        bounds = {"page": 2**63 - 1, "page_size": 2**63 - 1}
        for parameter in parameters:
            if parameter["name"] in bounds:
                parameter["schema"] = {
                    **parameter["schema"], "minimum": 1, "maximum": bounds[parameter["name"]]
                }  # fmt: skip
        return parameters
