"""The elastic controller: keeps the hybrid cloud the size of the queued work (its model, packing and forecasts), pure."""
