#pragma once
// Conversion of Python arguments to C++ values for the extension routepack._core, and of the
// library's strings back to Python. Header-only, so that the libFuzzer harness of these conversions
// (tests/fuzz/fuzz_python_args.cpp, an embedded interpreter) runs the very code the module runs.
//
// The rules, one for every argument of the module:
// - Integers: a Python int or anything with __index__ (numpy integer scalars, 0-d integer arrays);
//   bool, numpy.bool_ and bool arrays are refused ("<arg> must be an integer (got True)"), as are
//   floats. Out of the argument's range: "<arg> = <v> is too large (at most <hi>)" / "too small (at
//   least <lo>)", never wrapped or truncated.
// - Numbers (floats): anything with __float__ except bool.
// - Arrays: integer dtypes of either byte order (a big-endian '>i2' array gives the values of its
//   native twin); bool arrays are not integers.
// - A conversion that fails with TypeError (or ValueError for arrays: a ragged list) is the
//   argument's ValueError above; any other exception raised by the object (KeyboardInterrupt,
//   SystemExit, MemoryError, an error of its own __index__/__float__/__array__) propagates as it is.
// - Text from Python (sample ids): str encodable as UTF-8; a lone surrogate is refused naming the
//   argument and the code point. Text to Python from the library: UTF-8 decoded with
//   'surrogateescape', so bytes that are not UTF-8 (names stored by older imports) come back as
//   U+DC80..U+DCFF and s.encode('utf-8', 'surrogateescape') gives the stored bytes back.
// Every error is an ArgumentError (routepack.InputError, a ValueError) with the argument's name, or
// the object's own error.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace routepack::pyconv {

namespace py = pybind11;

/// The Python class bad arguments raise: routepack.InputError once routepack_module.cpp made it,
/// ValueError until then (the fuzz harness of these conversions runs them without the module).
inline PyObject*& argument_error_type() {
    static PyObject* type = PyExc_ValueError;
    return type;
}

/// A bad argument: raised in Python as argument_error_type() with the message (message_text). A
/// py::value_error, so that C++ catching those (the fuzz harness) catches it too.
class ArgumentError : public py::value_error {
public:
    explicit ArgumentError(const std::string& message) : py::value_error(message) {}
    void set_error() const override;
};

[[noreturn]] inline void value_error(const std::string& msg) {
    throw ArgumentError(msg);
}

/// ascii(v) for messages: ASCII whatever the object (no encoding error); an exception raised by its
/// __repr__ propagates.
inline std::string repr_text(const py::handle& v) {
    PyObject* s = PyObject_ASCII(v.ptr());
    if (s == nullptr) throw py::error_already_set();
    return std::string(py::reinterpret_steal<py::str>(s));
}

/// The type name of `v` ("list", "float").
inline std::string type_name(const py::handle& v) {
    return Py_TYPE(v.ptr())->tp_name;
}

/// After a failed C-API conversion: true (error cleared) when the pending error is one of the
/// plain conversion failures `kinds` (TypeError, ...); otherwise the error propagates (thrown).
inline bool clear_conversion_failure(std::initializer_list<PyObject*> kinds) {
    for (PyObject* k : kinds)
        if (PyErr_ExceptionMatches(k)) {
            PyErr_Clear();
            return true;
        }
    throw py::error_already_set();
}

inline std::string dtype_name(const py::array& a) {
    return std::string(py::str(a.dtype()));
}

inline std::string shape_text(const py::array& a) {
    std::string s = "(";
    for (py::ssize_t d = 0; d < a.ndim(); ++d)
        s += (d ? ", " : "") + std::to_string(a.shape(d));
    if (a.ndim() == 1) s += ",";
    return s + ")";
}

inline std::string index_text(const std::vector<py::ssize_t>& idx) {
    std::string s = "[";
    for (std::size_t i = 0; i < idx.size(); ++i)
        s += (i ? ", " : "") + std::to_string(idx[i]);
    return s + "]";
}

/// Flat index -> multi-index of a C-contiguous array of `shape`.
inline std::vector<py::ssize_t> unravel(py::ssize_t flat, const py::array& a) {
    std::vector<py::ssize_t> idx(static_cast<std::size_t>(a.ndim()));
    for (py::ssize_t d = a.ndim() - 1; d >= 0; --d) {
        idx[static_cast<std::size_t>(d)] = flat % a.shape(d);
        flat /= a.shape(d);
    }
    return idx;
}

/// True for bool, numpy.bool_ and numpy arrays of dtype bool: never integers.
inline bool is_bool_like(const py::handle& v) {
    if (PyBool_Check(v.ptr())) return true;
    if (py::isinstance<py::array>(v)) return py::reinterpret_borrow<py::array>(v).dtype().kind() == 'b';
    static PyObject* np_bool = py::object(py::module_::import("numpy").attr("bool_")).release().ptr();
    return PyObject_TypeCheck(v.ptr(), reinterpret_cast<PyTypeObject*>(np_bool)) != 0;
}

/// ValueError "<what>[i, j] = True is a bool, not an integer" for the first bool (or numpy.bool_) in
/// nested lists / tuples (numpy would read it as 1).
inline void refuse_bool_items(const py::handle& obj, const std::string& what, std::vector<py::ssize_t>& idx) {
    if (!PyList_Check(obj.ptr()) && !PyTuple_Check(obj.ptr())) {
        if (!idx.empty() && !py::isinstance<py::array>(obj) && is_bool_like(obj))
            value_error(what + index_text(idx) + " = " + repr_text(obj) + " is a bool, not an integer");
        return;
    }
    const py::sequence seq = py::reinterpret_borrow<py::sequence>(obj);
    const py::ssize_t n = PySequence_Size(obj.ptr());
    for (py::ssize_t i = 0; i < n; ++i) {
        idx.push_back(i);
        refuse_bool_items(seq[static_cast<std::size_t>(i)], what, idx);
        idx.pop_back();
    }
}

/// Any array-like as a numpy array (lists included); ValueError naming `what` when numpy cannot make
/// one (TypeError / ValueError), any other exception propagates. Unless `bools` (a mask), a bool
/// inside nested lists is refused (refuse_bool_items).
inline py::array as_array(const py::handle& obj, const std::string& what, bool bools = false) {
    PyObject* a = py::detail::npy_api::get().PyArray_FromAny_(obj.ptr(), nullptr, 0, 0,
                                                              py::detail::npy_api::NPY_ARRAY_ENSUREARRAY_, nullptr);
    if (a == nullptr) {
        clear_conversion_failure({PyExc_TypeError, PyExc_ValueError});
        value_error(what + " must be a numpy array or a nested list of numbers");
    }
    auto out = py::reinterpret_steal<py::array>(a);
    if (!bools && out.dtype().kind() != 'b') {
        std::vector<py::ssize_t> idx;
        refuse_bool_items(obj, what, idx);
    }
    return out;
}

/// `a` in native byte order and C order (a copy only when it is not already).
inline py::array native_c_array(const py::array& a) {
    py::dtype dt = a.dtype();
    if (dt.attr("isnative").cast<bool>()) return py::array::ensure(a, py::array::c_style);
    return py::reinterpret_steal<py::array>(py::detail::npy_api::get().PyArray_FromAny_(
        a.ptr(), dt.attr("newbyteorder")("=").release().ptr(), 0, 0,
        static_cast<int>(py::detail::npy_api::NPY_ARRAY_ENSUREARRAY_) | static_cast<int>(py::array::c_style) |
            static_cast<int>(py::array::forcecast),
        nullptr));
}

/// Calls f(typed C-contiguous native array) for an integer array of either byte order; ValueError for
/// anything else (bool, floats, objects, strings), naming `what` and the dtype.
template <class F> decltype(auto) with_integer_array(const py::array& a, const std::string& what, F&& f) {
    const char kind = a.dtype().kind();
    const auto size = a.dtype().itemsize();
    auto typed = [&](auto tag) -> decltype(auto) {
        using T = decltype(tag);
        // A C-order native array of exactly T: the values, whatever the source byte order.
        return f(py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(native_c_array(a)));
    };
    if (kind == 'i') {
        if (size == 1) return typed(std::int8_t{});
        if (size == 2) return typed(std::int16_t{});
        if (size == 4) return typed(std::int32_t{});
        if (size == 8) return typed(std::int64_t{});
    }
    if (kind == 'u') {
        if (size == 1) return typed(std::uint8_t{});
        if (size == 2) return typed(std::uint16_t{});
        if (size == 4) return typed(std::uint32_t{});
        if (size == 8) return typed(std::uint64_t{});
    }
    value_error(what + " must hold integers (got dtype " + dtype_name(a) + ")");
}

/// Integer values of an array, each checked to lie in [lo, hi]; ValueError "what[i, j] = v is ..." otherwise.
template <class Out>
std::vector<Out> checked_values(const py::array& a, const std::string& what, std::int64_t lo, std::uint64_t hi,
                                const char* lo_words) {
    return with_integer_array(a, what, [&](auto typed) {
        std::vector<Out> out(static_cast<std::size_t>(typed.size()));
        const auto* p = typed.data();
        for (py::ssize_t i = 0; i < typed.size(); ++i) {
            const auto v = p[i];
            if constexpr (std::is_signed_v<std::remove_cv_t<std::remove_reference_t<decltype(v)>>>) {
                if (static_cast<std::int64_t>(v) < lo)
                    value_error(what + index_text(unravel(i, typed)) + " = " + std::to_string(v) + " " + lo_words);
                if (v > 0 && static_cast<std::uint64_t>(v) > hi)
                    value_error(what + index_text(unravel(i, typed)) + " = " + std::to_string(v) + " exceeds " +
                                std::to_string(hi));
            } else {
                if (static_cast<std::uint64_t>(v) > hi)
                    value_error(what + index_text(unravel(i, typed)) + " = " + std::to_string(v) + " exceeds " +
                                std::to_string(hi));
            }
            // int8 arrays hold numbers (-1 = no expert), not characters.
            out[static_cast<std::size_t>(i)] = static_cast<Out>(v); // NOLINT(bugprone-signed-char-misuse)
        }
        return out;
    });
}

/// Non-negative loads from an integer array, or from a float array whose values are finite,
/// >= 0 and whole (EPLB-style float tensors of token counts).
inline std::vector<std::uint64_t> load_values(const py::array& a, const std::string& what) {
    if (a.dtype().kind() == 'f') {
        auto d = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
        std::vector<std::uint64_t> out(static_cast<std::size_t>(d.size()));
        for (py::ssize_t i = 0; i < d.size(); ++i) {
            const double v = d.data()[i];
            if (!std::isfinite(v) || v < 0 || v != std::floor(v) || v >= 1.8e19)
                value_error(what + index_text(unravel(i, d)) + " = " + repr_text(py::float_(v)) +
                            " is not a finite non-negative whole number");
            out[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(v);
        }
        return out;
    }
    return checked_values<std::uint64_t>(a, what, 0, std::numeric_limits<std::uint64_t>::max(), "is negative");
}

/// The text of an integer for a message: its digits, or "an integer of more than 4300 digits" where
/// Python refuses to print it.
inline std::string int_text(const py::handle& v) {
    PyObject* s = PyObject_Str(v.ptr());
    if (s == nullptr) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) throw py::error_already_set();
        PyErr_Clear();
        return "an integer of more than 4300 digits";
    }
    return std::string(py::reinterpret_steal<py::str>(s));
}

/// An integer argument as a Python int (see the rules above); nullopt for bools and for objects
/// that are not integers (TypeError from __index__). Other exceptions propagate.
inline std::optional<py::int_> as_py_int(const py::handle& v) {
    if (is_bool_like(v)) return std::nullopt;
    PyObject* i = PyNumber_Index(v.ptr());
    if (i == nullptr) {
        clear_conversion_failure({PyExc_TypeError});
        return std::nullopt;
    }
    return py::reinterpret_steal<py::int_>(i);
}

/// An integer argument that fits lo..hi: ValueError "<what> must be an integer (got <repr>)" for
/// any other type (bool and float included), "<what> = <v> is too large (at most hi)" or "... too
/// small (at least lo)" beyond it (never wrapped).
inline std::int64_t py_int_in(const py::handle& v, const std::string& what, std::int64_t lo, std::int64_t hi) {
    const auto i = as_py_int(v);
    if (!i) value_error(what + " must be an integer (got " + repr_text(v) + ")");
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(i->ptr(), &overflow);
    if (overflow > 0 || (overflow == 0 && x > hi))
        value_error(what + " = " + int_text(*i) + " is too large (at most " + std::to_string(hi) + ")");
    if (overflow < 0 || x < lo)
        value_error(what + " = " + int_text(*i) + " is too small (at least " + std::to_string(lo) + ")");
    return x;
}

/// py_int_in for an `int` argument (C int range unless narrower bounds are given).
inline int py_int(const py::handle& v, const std::string& what, int lo = std::numeric_limits<int>::min(),
                  int hi = std::numeric_limits<int>::max()) {
    return static_cast<int>(py_int_in(v, what, lo, hi));
}

/// None -> nullopt, otherwise py_int.
inline std::optional<int> py_opt_int(const py::handle& v, const std::string& what,
                                     int lo = std::numeric_limits<int>::min(),
                                     int hi = std::numeric_limits<int>::max()) {
    if (v.is_none()) return std::nullopt;
    return py_int(v, what, lo, hi);
}

/// An unsigned 64-bit integer argument (0..2**64-1): ValueError "<what> must be an integer in
/// 0..2**64-1 (got <v>)" otherwise.
inline std::uint64_t py_uint64(const py::handle& v, const std::string& what) {
    const auto i = as_py_int(v);
    if (!i) value_error(what + " must be an integer in 0..2**64-1 (got " + repr_text(v) + ")");
    const unsigned long long x = PyLong_AsUnsignedLongLong(i->ptr());
    if (x == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        value_error(what + " must be an integer in 0..2**64-1 (got " + int_text(*i) + ")");
    }
    return x;
}

/// A number argument (a float, an int, anything with __float__; not bool): ValueError "<what> must be
/// a number (got <repr>)" otherwise.
inline double py_float(const py::handle& v, const std::string& what) {
    if (is_bool_like(v)) value_error(what + " must be a number (got " + repr_text(v) + ")");
    const double x = PyFloat_AsDouble(v.ptr());
    if (x == -1.0 && PyErr_Occurred()) {
        clear_conversion_failure({PyExc_TypeError, PyExc_OverflowError});
        value_error(what + " must be a number (got " + (PyLong_Check(v.ptr()) ? int_text(v) : repr_text(v)) + ")");
    }
    return x;
}

/// The items of a sequence argument (list, tuple, 1-d array, any iterable but str/bytes/dict):
/// ValueError "<what> must be a list of <item_words> (got <type>)" otherwise.
inline std::vector<py::object> py_items(const py::handle& v, const std::string& what, const char* item_words) {
    if (PyUnicode_Check(v.ptr()) || PyBytes_Check(v.ptr()) || PyDict_Check(v.ptr()) ||
        (py::isinstance<py::array>(v) && py::reinterpret_borrow<py::array>(v).ndim() == 0))
        value_error(what + " must be a list of " + item_words + " (got " + type_name(v) + ")");
    PyObject* seq = PySequence_Fast(v.ptr(), "not iterable");
    if (seq == nullptr) {
        clear_conversion_failure({PyExc_TypeError});
        value_error(what + " must be a list of " + item_words + " (got " + type_name(v) + ")");
    }
    const auto keep = py::reinterpret_steal<py::object>(seq);
    const py::ssize_t n = PySequence_Fast_GET_SIZE(seq);
    std::vector<py::object> out;
    out.reserve(static_cast<std::size_t>(n));
    for (py::ssize_t i = 0; i < n; ++i)
        out.push_back(py::reinterpret_borrow<py::object>(PySequence_Fast_GET_ITEM(seq, i)));
    return out;
}

/// A list of integers, each as py_int(item, "<what>[i]", lo, hi).
inline std::vector<int> py_int_list(const py::handle& v, const std::string& what,
                                    int lo = std::numeric_limits<int>::min(),
                                    int hi = std::numeric_limits<int>::max()) {
    std::vector<int> out;
    const auto items = py_items(v, what, "integers");
    for (std::size_t i = 0; i < items.size(); ++i)
        out.push_back(py_int(items[i], what + "[" + std::to_string(i) + "]", lo, hi));
    return out;
}

/// A text argument as UTF-8: a str (numpy.str_ included) without lone surrogates. ValueError
/// "<what> must be a str (got <type>)" or "<what> = <ascii> is not valid Unicode text: lone surrogate
/// U+DCFF at character <k> (...)".
inline std::string py_utf8(const py::handle& v, const std::string& what) {
    if (!PyUnicode_Check(v.ptr())) value_error(what + " must be a str (got " + type_name(v) + ")");
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(v.ptr(), &n);
    if (s == nullptr) {
        clear_conversion_failure({PyExc_UnicodeEncodeError});
        const Py_ssize_t len = PyUnicode_GetLength(v.ptr());
        Py_ssize_t at = 0;
        Py_UCS4 c = 0;
        for (; at < len; ++at) {
            c = PyUnicode_ReadChar(v.ptr(), at);
            if (c >= 0xD800 && c <= 0xDFFF) break;
        }
        char code[16];
        std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
        value_error(what + " = " + repr_text(v) + " is not valid Unicode text: lone surrogate " + code +
                    " at character " + std::to_string(at) + " (it cannot be written as UTF-8)");
    }
    return std::string(s, static_cast<std::size_t>(n));
}

/// A file path argument (str, bytes or os.PathLike) as the bytes the file system sees
/// (os.fsencode: a str's surrogate escapes become the original bytes). ValueError "<what> must be a
/// path (str, bytes or os.PathLike; got <type>)", "<what> = <ascii> cannot be a file name (...)" for
/// a str that no file name encodes to or a path holding a NUL byte.
inline std::string py_path(const py::handle& v, const std::string& what) {
    static PyObject* fsencode = py::object(py::module_::import("os").attr("fsencode")).release().ptr();
    PyObject* b = PyObject_CallOneArg(fsencode, v.ptr());
    if (b == nullptr) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
            value_error(what + " = " + repr_text(v) +
                        " cannot be a file name (a lone surrogate outside U+DC80..U+DCFF)");
        }
        clear_conversion_failure({PyExc_TypeError});
        value_error(what + " must be a path (str, bytes or os.PathLike; got " + type_name(v) + ")");
    }
    const auto keep = py::reinterpret_steal<py::bytes>(b);
    std::string path(keep);
    if (path.find('\0') != std::string::npos)
        value_error(what + " = " + repr_text(v) + " cannot be a file name (it holds a NUL byte)");
    return path;
}

/// A name the library is asked for (trace, window): a str as UTF-8, its 'surrogateescape' escapes
/// (as py_text gives names back) turned into the stored bytes. ValueError "<what> must be a str (got
/// <type>)", or naming the code point of any other lone surrogate.
inline std::string py_name(const py::handle& v, const std::string& what) {
    if (!PyUnicode_Check(v.ptr())) value_error(what + " must be a str (got " + type_name(v) + ")");
    PyObject* b = PyUnicode_AsEncodedString(v.ptr(), "utf-8", "surrogateescape");
    if (b == nullptr) {
        clear_conversion_failure({PyExc_UnicodeEncodeError});
        return py_utf8(v, what); // the lone surrogate's message
    }
    const auto keep = py::reinterpret_steal<py::bytes>(b);
    return std::string(keep);
}

/// Text from the library (names, sample ids) as a Python str: UTF-8, with the bytes that are not
/// UTF-8 decoded by 'surrogateescape' (U+DC80..U+DCFF), so that no stored name makes a call fail and
/// s.encode('utf-8', 'surrogateescape') gives the stored bytes back.
inline py::str py_text(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
    if (o == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

/// True when `s` is valid UTF-8 (the strict decoder accepts it).
inline bool is_utf8(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
    if (o == nullptr) {
        clear_conversion_failure({PyExc_UnicodeDecodeError});
        return false;
    }
    Py_DECREF(o);
    return true;
}

/// A list of library texts (py_text each).
inline py::list py_text_list(const std::vector<std::string>& v) {
    py::list out;
    for (const auto& s : v)
        out.append(py_text(s));
    return out;
}

/// An error message from the core as a Python str: its bytes that are not UTF-8 (a stored name
/// quoted in the message) as \xNN escapes ('backslashreplace'), so the message is always readable.
inline py::str message_text(const char* msg) {
    PyObject* o = PyUnicode_DecodeUTF8(msg, static_cast<Py_ssize_t>(std::strlen(msg)), "backslashreplace");
    if (o == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

inline void ArgumentError::set_error() const {
    PyErr_SetObject(argument_error_type(), message_text(what()).ptr());
}

} // namespace routepack::pyconv
