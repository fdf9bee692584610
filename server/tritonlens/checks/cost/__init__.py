"""The cost model, one module per mechanism (checks/costmodel.py assembles them and keeps the names its callers
import): `tensors` (what a captured launch's tensors hold), `floor` (the physical floor an estimate is checked
against)."""
