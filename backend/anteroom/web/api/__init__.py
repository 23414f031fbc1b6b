"""What every API area shares: the route table, the request and answer models and the OpenAPI
document built from them."""
