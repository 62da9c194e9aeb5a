"""Sessions: records and the store protocol, the built-in stores, and the service over every backend."""
