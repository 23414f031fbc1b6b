"""Pages a person reads: the hosted waiting page, its no-JavaScript twin, the fairness report and
the public documents served beside them."""
