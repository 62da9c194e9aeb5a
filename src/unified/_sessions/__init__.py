"""Sessions: records and the store protocol, and the built-in stores.

The service over every backend (`unified._session_service`) stands above the backend registry, outside
this folder: nothing here knows a backend.
"""
