from rest_framework.pagination import PageNumberPagination


class CappedPageNumberPagination(PageNumberPagination):
    """``?page=N&page_size=M`` with the page size capped, so no list is unbounded."""

    page_size_query_param = "page_size"
    max_page_size = 500
