"""REST API v1: thin views that translate HTTP to the advisor/pricing/estimator services and back."""
