"""The cost model, one module per mechanism (checks/costmodel.py keeps the names its callers import):

- launch: `Cost`, one launch's estimate, and how its parts make its time, its bound and how far to trust it
- estimate: one captured launch made into a Cost; kernel: what the compile says, read once per spec
- memory: DRAM traffic (passes, L2 re-reads, uncoalesced sectors) and the tiles through L2
- latency: few programs (what one keeps in flight, Little's law) and the waves of programs
- dots: the tensor cores by operand type and the GEMM pipeline's overlap
- issue: instructions; pipe: the shared-memory pipe and layout conversions; spills
- trips: the loops' trips of a launch; floor: the physical floor an estimate is checked against
- tensors: what a launch's tensors hold; findings: what each finding's cause costs
"""
