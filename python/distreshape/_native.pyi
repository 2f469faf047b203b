"""Type stubs of the extension module (the Rust crate in python/src)."""

from typing import Any, Optional, TypedDict

import numpy as np

_Problem = Optional[tuple[int, str]]

def status_names() -> dict[int, str]: ...
def option_names() -> list[str]: ...
def balanced_slab(extent: int, nranks: int, rank: int) -> tuple[int, int]: ...

class _LayoutSpec(TypedDict):
    shape: list[int]
    grid_dims: list[int]
    axis_grid: list[Optional[int]]
    lengths: list[tuple[int, list[int]]]

def layout_box(spec: _LayoutSpec, nranks: int, rank: int) -> list[tuple[int, int]]: ...

class NativePlan:
    def __init__(
        self,
        comm: int,
        gshape: list[int],
        split: Optional[int],
        local_len: int,
        new_shape: list[int],
        new_split: Optional[int],
        new_local_len: Optional[int],
        dtype: np.dtype,
        problem: _Problem,
        options: list[tuple[str, int]],
    ) -> None: ...
    @staticmethod
    def from_layouts(
        comm: int,
        input: Optional[_LayoutSpec],
        output: Optional[_LayoutSpec],
        dtype: np.dtype,
        input_strides: Optional[list[int]],
        output_strides: Optional[list[int]],
        problem: _Problem,
        options: list[tuple[str, int]],
    ) -> NativePlan: ...
    output_shape: list[int]
    local_input_shape: list[int]
    local_output_shape: list[int]
    input_slab: Optional[tuple[int, int]]
    output_slab: Optional[tuple[int, int]]
    input_box: list[tuple[int, int]]
    output_box: list[tuple[int, int]]
    output_elems: int
    input_strides: list[int]
    output_strides: list[int]
    strided: tuple[bool, bool]
    stats: tuple[str, int, int, int, int, int]
    is_collective: bool
    def describe(self) -> str: ...
    def execute(self, input: Any, output: Any, problem: _Problem) -> None: ...
    def execute_in_place(self, buffer: Any) -> None: ...
    def begin(self, input: Any, output: Any, problem: _Problem) -> NativeRequest: ...
    def execute_many(self, inputs: list[Any], outputs: list[Any], problem: _Problem) -> None: ...
    def begin_many(self, inputs: list[Any], outputs: list[Any], problem: _Problem) -> NativeRequest: ...

class NativeRequest:
    completed: bool
    def test(self) -> bool: ...
    def wait(self) -> Any: ...

class NativeFused:
    def __init__(self, plans: list[NativePlan], problem: _Problem) -> None: ...
    framed_pairs: int
    framed_bytes: int
    def execute(self, inputs: list[Any], outputs: list[Any], in_place: list[bool], problem: _Problem) -> None: ...
