"""Pure parsers of the compiler's layers (TTIR/TTGIR, LLIR, PTX, SASS, AMDGCN, remarks) with line maps back to
the kernel's source. No triton import; only `sass.disassemble` / `sass.resource_usage` run a tool."""
from .amdgcn import GcnInstr, GcnModule, parse_amdgcn
from .linemap import LineMap, SrcLoc, pick_frames, same_file
from .llir import LlirModule, parse_llir
from .mlir import ConvertLayout, MlirModule, MlirOp, convert_layout_info, layout_kind, layout_of, parse_mlir
from .ptx import PtxInstr, PtxModule, parse_ptx
from .remarks import Remark, parse_remarks, parse_vectorization
from .sass import SassInstr, SassModule, ToolError, disassemble, parse_resource_usage, parse_sass, resource_usage

__all__ = [
    "ConvertLayout", "GcnInstr", "GcnModule", "LineMap", "LlirModule", "MlirModule", "MlirOp", "PtxInstr",
    "PtxModule", "Remark", "SassInstr", "SassModule", "SrcLoc", "ToolError", "convert_layout_info",
    "disassemble", "layout_kind", "layout_of", "parse_amdgcn", "parse_llir", "parse_mlir", "parse_ptx",
    "parse_remarks", "parse_resource_usage", "parse_sass", "parse_vectorization", "pick_frames",
    "resource_usage", "same_file",
]
