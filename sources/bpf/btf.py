"""The few facts about the running kernel's types that block mode needs, read from its BTF (/sys/kernel/btf/vmlinux).

Block tracepoints' formatted fields (dev, sector, rwbs) carry no identity of the request, so two requests
for the same sector, or a flush (issued at sector 0, completed at sector -1), cannot be paired by them. The
raw tracepoints carry the `struct request *` itself: bcc pairs issue and completion by that pointer, and
reads the disk and the operation through it at offsets taken from the kernel's own BTF, so kernel headers
of another version (they need not match; see `preconditions.kernel_headers_dir`) never decide a layout.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache

VMLINUX = "/sys/kernel/btf/vmlinux"
MAGIC = 0xEB9F
# BTF kinds (include/uapi/linux/btf.h) and the bytes each one's record carries after the common 12.
INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT = range(1, 12)
FUNC, FUNC_PROTO, VAR, DATASEC, FLOAT, DECL_TAG, TYPE_TAG, ENUM64 = range(12, 20)
_FIXED = {INT: 4, ARRAY: 12, VAR: 4, DECL_TAG: 4}
_PER_ITEM = {STRUCT: 12, UNION: 12, ENUM: 8, FUNC_PROTO: 8, DATASEC: 12, ENUM64: 12}
_SKIP = (TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG)


class BtfError(ValueError):
    """The BTF is missing, malformed, or lacks a type or member asked for."""


@dataclass(frozen=True, slots=True)
class _Type:
    kind: int
    name: str
    ref: int  # size (struct, union, int, enum) or referenced type id (ptr, typedef, func_proto's return...)
    items: tuple[tuple[str, int, int], ...]  # members: (name, type id, bit offset); params: (name, type id, 0)


class Btf:
    """Parsed BTF: types by id and by (kind, name)."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 24:
            raise BtfError("BTF too short")
        magic, _version, _flags, hdr_len = struct.unpack_from("<HBBI", data, 0)
        if magic != MAGIC:
            raise BtfError("not BTF (bad magic; big-endian BTF is not read)")
        type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", data, 8)
        strings = data[hdr_len + str_off:hdr_len + str_off + str_len]
        self.types: list[_Type | None] = [None]
        self.by_name: dict[tuple[int, str], int] = {}

        def name_at(off: int) -> str:
            end = strings.find(b"\0", off)
            return strings[off:end if end >= 0 else len(strings)].decode("ascii", "replace")

        pos, stop = hdr_len + type_off, hdr_len + type_off + type_len
        while pos < stop:
            name_off, info, ref = struct.unpack_from("<III", data, pos)
            kind, vlen, kflag = (info >> 24) & 0x1F, info & 0xFFFF, info >> 31
            pos += 12
            items: list[tuple[str, int, int]] = []
            if kind in (STRUCT, UNION):
                for i in range(vlen):
                    m_name, m_type, m_off = struct.unpack_from("<III", data, pos + 12 * i)
                    items.append((name_at(m_name), m_type, m_off & 0xFFFFFF if kflag else m_off))
            elif kind == FUNC_PROTO:
                for i in range(vlen):
                    p_name, p_type = struct.unpack_from("<II", data, pos + 8 * i)
                    items.append((name_at(p_name), p_type, 0))
            elif kind == ENUM:
                for i in range(vlen):
                    e_name, e_val = struct.unpack_from("<Ii", data, pos + 8 * i)
                    items.append((name_at(e_name), 0, e_val))
            pos += _FIXED.get(kind, 0) + _PER_ITEM.get(kind, 0) * vlen
            entry = _Type(kind, name_at(name_off), ref, tuple(items))
            self.by_name.setdefault((kind, entry.name), len(self.types))
            self.types.append(entry)

    def find(self, kind: int, name: str) -> _Type:
        """The type of that kind and name; BtfError when absent."""
        index = self.by_name.get((kind, name))
        if index is None:
            raise BtfError(f"no {name!r} in the kernel's BTF")
        return self._get(index)

    def _get(self, index: int) -> _Type:
        entry = self.types[index] if 0 < index < len(self.types) else None
        if entry is None:
            raise BtfError(f"BTF type id {index} out of range")
        return entry

    def resolve(self, index: int) -> _Type:
        """The type behind typedefs and qualifiers."""
        entry = self._get(index)
        for _ in range(64):
            if entry.kind not in _SKIP:
                return entry
            entry = self._get(entry.ref)
        raise BtfError("BTF typedef chain too long")

    def member_offset(self, struct_name: str, member: str) -> int:
        """Byte offset of `member` in `struct struct_name`, looking inside anonymous structs and unions."""
        found = self._member(self.find(STRUCT, struct_name), member, 0)
        if found is None:
            raise BtfError(f"no member {member!r} in struct {struct_name} (kernel BTF)")
        if found % 8:
            raise BtfError(f"struct {struct_name} member {member!r} is a bit field")
        return found // 8

    def _member(self, entry: _Type, member: str, base: int) -> int | None:
        for name, type_id, bits in entry.items:
            if name == member:
                return base + bits
            if not name:
                inner = self.resolve(type_id)
                if inner.kind in (STRUCT, UNION):
                    found = self._member(inner, member, base + bits)
                    if found is not None:
                        return found
        return None

    def tracepoint_arg(self, event: str, struct_name: str) -> int:
        """Index in a raw tracepoint's `ctx->args` of its `struct struct_name *` argument.

        The kernel declares `typedef void (*btf_trace_<event>)(void *__data, <TP_PROTO args>)`;
        raw tracepoint programs see the TP_PROTO arguments only.
        """
        proto = self.resolve(self.find(TYPEDEF, f"btf_trace_{event}").ref)
        if proto.kind == PTR:
            proto = self.resolve(proto.ref)
        if proto.kind != FUNC_PROTO:
            raise BtfError(f"btf_trace_{event} is no function prototype")
        for i, (_name, type_id, _) in enumerate(proto.items[1:]):
            arg = self.resolve(type_id)
            if arg.kind == PTR and arg.ref and self.resolve(arg.ref).kind == STRUCT \
                    and self.resolve(arg.ref).name == struct_name:
                return i
        raise BtfError(f"tracepoint {event} has no struct {struct_name} * argument")

    def enum_value(self, name: str) -> int | None:
        """The value of an enumerator anywhere in the BTF, or None."""
        for entry in self.types:
            if entry is not None and entry.kind == ENUM:
                for item_name, _t, value in entry.items:
                    if item_name == name:
                        return value
        return None


@dataclass(frozen=True, slots=True)
class RequestLayout:
    """Where block mode finds a request's disk and operation, and which raw tracepoint argument is the request."""

    q: int  # struct request -> q (struct request_queue *)
    cmd_flags: int  # struct request -> cmd_flags (low 8 bits: the REQ_OP)
    disk: int  # struct request_queue -> disk (struct gendisk *)
    major: int  # struct gendisk -> major (int)
    first_minor: int  # struct gendisk -> first_minor (int)
    args: tuple[tuple[str, int], ...]  # (raw tracepoint, index of its struct request * in ctx->args)
    op_read: int  # REQ_OP_READ: rwbs 'R'
    op_write: int  # REQ_OP_WRITE: rwbs 'W' (every other operation is "other", as rwbs_op reads rwbs)

    def arg(self, event: str) -> int:
        """Index of the request in `event`'s args."""
        return dict(self.args)[event]


EVENTS = ("block_rq_insert", "block_rq_issue", "block_rq_complete", "block_rq_merge")


def request_layout_of(btf: Btf) -> RequestLayout:
    """The layout from parsed BTF; BtfError when a piece is missing."""
    read, write = btf.enum_value("REQ_OP_READ"), btf.enum_value("REQ_OP_WRITE")
    return RequestLayout(
        q=btf.member_offset("request", "q"), cmd_flags=btf.member_offset("request", "cmd_flags"),
        disk=btf.member_offset("request_queue", "disk"), major=btf.member_offset("gendisk", "major"),
        first_minor=btf.member_offset("gendisk", "first_minor"),
        args=tuple((event, btf.tracepoint_arg(event, "request")) for event in EVENTS),
        op_read=0 if read is None else read, op_write=1 if write is None else write)


@cache
def request_layout(path: str = VMLINUX) -> RequestLayout:
    """The running kernel's request layout; BtfError (with the reason) when its BTF cannot give it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as err:
        raise BtfError(f"cannot read the kernel's BTF ({path}: {err.strerror})") from None
    return request_layout_of(Btf(data))
