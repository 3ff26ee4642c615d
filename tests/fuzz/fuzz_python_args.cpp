// libFuzzer harness for the Python module's argument conversions (app/python/py_convert.h, the code
// routepack._core runs on every argument), in an embedded interpreter with numpy. Each input is a
// small program: it builds a Python object (ints of any size and sign, bools, numpy scalars and
// arrays of every integer dtype in either byte order, floats, str with lone surrogates, bytes, lists,
// objects whose __index__ / __float__ / __array__ raise) and runs every conversion on it.
// Properties checked (a violation aborts):
// - a conversion returns a value in the argument's range, raises ValueError whose text starts with
//   the argument's name, or lets through an exception the object itself raised that is not a plain
//   conversion failure; nothing else (no other C++ exception, no error of an object that raises
//   nothing, no pending Python error after a return);
// - an integer result equals operator.index(obj); bools are never integers;
// - an integer array and its byte-swapped twin give the same values;
// - text from the library round-trips: py_text(b).encode('utf-8', 'surrogateescape') == b, and
//   py_name(py_text(b)) == b; py_utf8(s) == s.encode('utf-8') whenever that succeeds.
#include "app/python/py_convert.h"

#include <pybind11/embed.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace py = pybind11;
namespace pc = routepack::pyconv;

namespace {

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "fuzz_python_args: %s\n", why.c_str());
    std::abort();
}

/// The input as a stream of bytes (zeros once exhausted).
struct Bytes {
    const std::uint8_t* p;
    std::size_t n;
    std::uint8_t next() {
        if (n == 0) return 0;
        --n;
        return *p++;
    }
    std::uint64_t next_u64(int count) {
        std::uint64_t v = 0;
        for (int i = 0; i < count; ++i)
            v = (v << 8) | next();
        return v;
    }
};

/// What the built object may raise from its own conversion hooks (besides plain failures).
struct Built {
    py::object obj;
    bool may_raise = false;
    py::object raises = py::none(); ///< the exception type the object's own hooks raise (top level only)
};

py::module_& helpers() {
    static py::module_ m = [] {
        py::module_ h = py::module_::import("types").attr("ModuleType")("fuzz_helpers");
        py::exec(R"(
import numpy as np
class Raising:
    def __init__(self, exc): self.exc = exc
    def __index__(self): raise self.exc
    def __float__(self): raise self.exc
    def __array__(self, *a, **k): raise self.exc
class NotAnInt:
    def __index__(self): return 1.5
EXCEPTIONS = [TypeError, ValueError, OverflowError, KeyboardInterrupt, SystemExit, MemoryError, RuntimeError]
DTYPES = ['i1', 'i2', 'i4', 'i8', 'u1', 'u2', 'u4', 'u8', '?', 'f4', 'f8', 'O']
)",
                 h.attr("__dict__"));
        return h;
    }();
    return m;
}

Built build(Bytes& in, int depth) {
    py::module_& h = helpers();
    py::module_ np = py::module_::import("numpy");
    const std::uint8_t op = in.next() % 13;
    switch (op) {
    case 0: { // a Python int of up to 16 bytes, either sign
        const int len = in.next() % 17;
        std::string bytes;
        for (int i = 0; i < len; ++i)
            bytes.push_back(static_cast<char>(in.next()));
        return {py::int_(py::module_::import("builtins")
                             .attr("int")
                             .attr("from_bytes")(py::bytes(bytes), "little", py::arg("signed") = true))};
    }
    case 1: { // a numpy scalar of any numeric dtype (bool included)
        py::list dtypes = h.attr("DTYPES");
        const std::string dt = py::str(dtypes[in.next() % (dtypes.size() - 1)]);
        const auto v = static_cast<std::int64_t>(in.next_u64(8));
        return {np.attr("array")(py::int_(v)).attr("astype")(dt)[py::tuple()]};
    }
    case 2:
        return {py::bool_(in.next() & 1)};
    case 3: {
        const std::uint64_t bits = in.next_u64(8);
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return {py::float_(d)};
    }
    case 4: { // a str of code points, lone surrogates included
        const int len = in.next() % 9;
        py::list cps;
        for (int i = 0; i < len; ++i)
            cps.append(py::int_(in.next_u64(3) % 0x110000));
        return {py::str("").attr("join")(
            py::module_::import("builtins").attr("map")(py::module_::import("builtins").attr("chr"), cps))};
    }
    case 5: { // bytes
        const int len = in.next() % 9;
        std::string b;
        for (int i = 0; i < len; ++i)
            b.push_back(static_cast<char>(in.next()));
        return {py::bytes(b)};
    }
    case 6: { // a list (or tuple) of objects
        const int len = depth > 2 ? 0 : in.next() % 5;
        py::list l;
        bool raises = false;
        for (int i = 0; i < len; ++i) {
            Built b = build(in, depth + 1);
            raises = raises || b.may_raise;
            l.append(b.obj);
        }
        if (in.next() & 1) return {py::tuple(l), raises};
        return {l, raises};
    }
    case 7: { // a numpy array of any dtype and byte order, 0-d to 2-d
        py::list dtypes = h.attr("DTYPES");
        std::string dt = py::str(dtypes[in.next() % dtypes.size()]);
        const int ndim = in.next() % 3;
        const int rows = 1 + in.next() % 4, cols = 1 + in.next() % 4;
        const int count = ndim == 0 ? 1 : ndim == 1 ? rows : rows * cols;
        py::list values;
        for (int i = 0; i < count; ++i)
            values.append(py::int_(static_cast<std::int64_t>(in.next_u64(in.next() % 9) - 128)));
        py::object a = np.attr("array")(values, py::arg("dtype") = "i8");
        if (dt != "O") a = a.attr("astype")(dt);
        if (in.next() & 1) a = a.attr("astype")(a.attr("dtype").attr("newbyteorder")(">"));
        if (ndim == 0) a = a.attr("reshape")(py::tuple());
        if (ndim == 2) a = a.attr("reshape")(rows, cols);
        if (ndim == 2 && (in.next() & 1)) a = a.attr("T"); // not C-contiguous
        return {a};
    }
    case 8: { // an object whose conversion hooks raise
        py::list excs = h.attr("EXCEPTIONS");
        const std::size_t k = in.next() % excs.size();
        // TypeError alone is a plain conversion failure.
        return {h.attr("Raising")(excs[k]), k >= 1, excs[k]};
    }
    case 9:
        return {py::none()};
    case 10:
        return {h.attr("NotAnInt")()};
    case 11: { // a big power of two, around the C ranges
        const int shift = in.next() % 130;
        py::object v = py::int_(1).attr("__lshift__")(shift);
        if (in.next() & 1) v = v.attr("__neg__")();
        if (in.next() & 1) v = v.attr("__sub__")(1);
        return {v};
    }
    default:
        return {py::dict()};
    }
}

/// Runs `f`; a ValueError must start with `what`, an error_already_set must be raised by the object.
/// With `must_propagate` (an exception type), f must end in exactly that exception.
template <class F>
void expect(const std::string& what, const Built& b, F&& f, const py::object& must_propagate = py::none()) {
    bool propagated = false;
    try {
        f();
    } catch (const py::value_error& e) {
        if (std::string(e.what()).rfind(what, 0) != 0) fail("ValueError not naming '" + what + "': " + e.what());
    } catch (py::error_already_set& e) {
        if (!b.may_raise) fail("'" + what + "' raised " + std::string(e.what()) + " for an object that raises nothing");
        propagated = must_propagate.is_none() || e.matches(must_propagate);
    } catch (const std::exception& e) {
        fail("'" + what + "' threw " + std::string(e.what()));
    }
    if (PyErr_Occurred() != nullptr) fail("'" + what + "' left a Python error set");
    if (!must_propagate.is_none() && !propagated)
        fail("'" + what + "' did not let " + std::string(py::str(must_propagate)) + " through");
}

/// The exception type a conversion must let through for `b`: the object's own, unless it is one of
/// `plain` (a plain conversion failure, reported as the argument's ValueError).
py::object must_pass(const Built& b, std::initializer_list<PyObject*> plain) {
    if (b.raises.is_none()) return py::none();
    for (PyObject* p : plain)
        if (b.raises.ptr() == p) return py::none();
    return b.raises;
}

void check_int(const Built& b, std::int64_t lo, std::int64_t hi) {
    expect(
        "arg", b,
        [&] {
            const std::int64_t x = pc::py_int_in(b.obj, "arg", lo, hi);
            if (x < lo || x > hi) fail("py_int_in out of range");
            if (pc::is_bool_like(b.obj)) fail("a bool converted as an integer");
            const py::object want = py::module_::import("operator").attr("index")(b.obj);
            if (!want.equal(py::int_(x))) fail("py_int_in differs from operator.index");
        },
        must_pass(b, {PyExc_TypeError}));
    expect(
        "seed", b,
        [&] {
            const std::uint64_t x = pc::py_uint64(b.obj, "seed");
            if (!py::module_::import("operator").attr("index")(b.obj).equal(py::int_(x))) fail("py_uint64 differs");
        },
        must_pass(b, {PyExc_TypeError}));
    expect(
        "x", b,
        [&] {
            const double d = pc::py_float(b.obj, "x");
            (void)d;
            if (pc::is_bool_like(b.obj)) fail("a bool converted as a number");
        },
        must_pass(b, {PyExc_TypeError, PyExc_OverflowError}));
    expect("layers", b, [&] { (void)pc::py_int_list(b.obj, "layers", static_cast<int>(lo % 1000), 1000); });
}

/// True when nested lists / tuples hold a bool (or numpy.bool_) below the top level.
bool contains_bool(const py::handle& obj) {
    if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr())) return false;
    for (const py::handle item : py::reinterpret_borrow<py::sequence>(obj))
        if ((!py::isinstance<py::array>(item) && pc::is_bool_like(item)) || contains_bool(item)) return true;
    return false;
}

void check_array(const Built& b) {
    const py::object through = must_pass(b, {PyExc_TypeError, PyExc_ValueError});
    if (!through.is_none()) {
        expect(
            "a", b, [&] { (void)pc::as_array(b.obj, "a"); }, through);
        return;
    }
    expect("a", b, [&] {
        const py::array a = pc::as_array(b.obj, "a");
        if (a.dtype().kind() != 'b' && contains_bool(b.obj)) fail("a bool inside nested lists read as a number");
        expect("a", b, [&] {
            const auto v = pc::checked_values<std::int64_t>(a, "a", INT64_MIN, INT64_MAX, "is negative");
            if (a.dtype().kind() == 'b') fail("a bool array read as integers");
            // The byte-swapped twin holds the same values.
            const py::array swapped = a.attr("astype")(a.dtype().attr("newbyteorder")("S"));
            const auto w = pc::checked_values<std::int64_t>(swapped, "a", INT64_MIN, INT64_MAX, "is negative");
            if (v != w) fail("a byte-swapped array gives other values");
            const py::array native = pc::native_c_array(swapped);
            if (!native.dtype().attr("isnative").cast<bool>() || !a.attr("__eq__")(native).attr("all")().cast<bool>())
                fail("native_c_array changed the values");
        });
        expect("loads", b, [&] { (void)pc::load_values(a, "loads"); });
    });
}

void check_text(const Built& b) {
    expect("id", b, [&] {
        const std::string s = pc::py_utf8(b.obj, "id");
        const py::bytes want = b.obj.attr("encode")("utf-8");
        if (s != std::string(want)) fail("py_utf8 differs from str.encode('utf-8')");
    });
    expect("name", b, [&] {
        const std::string s = pc::py_name(b.obj, "name");
        if (s != std::string(py::bytes(b.obj.attr("encode")("utf-8", "surrogateescape"))))
            fail("py_name differs from surrogateescape");
    });
    expect("path", b, [&] { (void)pc::py_path(b.obj, "path"); });
    if (py::isinstance<py::bytes>(b.obj)) {
        const std::string raw = std::string(py::bytes(b.obj));
        const py::str text = pc::py_text(raw);
        if (std::string(py::bytes(text.attr("encode")("utf-8", "surrogateescape"))) != raw)
            fail("py_text does not round-trip");
        if (pc::py_name(text, "name") != raw) fail("py_name(py_text(b)) != b");
        if (pc::is_utf8(raw) != (std::string(py::bytes(text.attr("encode")("utf-8", "surrogatepass"))) == raw))
            fail("is_utf8 disagrees with the decoder");
        (void)pc::message_text(raw.c_str());
    }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    py::initialize_interpreter();
    (void)helpers();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Bytes in{data, size};
    const auto lo = static_cast<std::int64_t>(in.next_u64(8)) >> (in.next() % 64);
    std::int64_t hi = 0;
    if (__builtin_add_overflow(lo, static_cast<std::int64_t>(in.next_u64(4)), &hi)) hi = INT64_MAX;
    const Built b = build(in, 0);
    check_int(b, lo, hi);
    check_array(b);
    check_text(b);
    expect("list", b, [&] { (void)pc::py_items(b.obj, "list", "items"); });
    return 0;
}
