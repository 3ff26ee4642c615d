// Nested JSON lists of routes (trace-formats.md §1 "nested JSON", Megatron inference, NeMo Gym).
//
// A record is a list [rows][layers][top_k] of expert ids, or an object {"data": that list,
// "dtype": "..."} (Megatron's generic ndarray; dtype, when present, must name an integer type;
// other keys are ignored). The file is either one record (sample id = file stem) or JSON lines of
// records (line k -> "<stem>#<k>"; a one-line ".jsonl" file is JSON lines too). null or -1 = missing route. Every row
// must have the same number of layers and every layer exactly top_k ids; layer axis via resolve_layer_axis (all layers
// or MoE only). t_i = rows + 1 (rule 1).
//
// Parsed with a SAX handler straight into the flat id buffer (no DOM), since here the routes are
// the JSON itself.
#include "core/import/import_detail.h"

namespace routepack::detail {

namespace {

class NestedRoutesSax {
public:
    NestedRoutesSax(const ModelDescription& m, std::vector<std::int32_t>& ids) : top_k_(m.top_k), ids_(ids) {}

    void reset(const std::string& where) {
        where_ = where;
        ids_.clear();
        rows = 0;
        layers = -1;
        dtype.reset();
        failed = false;
        top_ = Top::Start;
        have_data_ = false;
        d_ = 0;
        skip_ = 0;
        pending_.clear();
    }

    std::int64_t rows = 0;
    int layers = -1;
    std::optional<std::string> dtype;
    bool failed = false;
    std::size_t error_pos = 0;
    std::string error_desc;

    // nlohmann SAX interface
    bool null() {
        if (skip_) return true;
        if (d_ == 3) return push(-1);
        return unexpected("null");
    }
    bool boolean(bool) { return skip_ ? true : unexpected("a boolean"); }
    bool number_integer(std::int64_t v) {
        if (skip_) return true;
        if (d_ == 3) {
            if (!std::in_range<std::int32_t>(v))
                fail(position() + ": expert id " + std::to_string(v) + " does not fit int32");
            return push(static_cast<std::int32_t>(v));
        }
        return unexpected("a number");
    }
    bool number_unsigned(std::uint64_t v) {
        if (skip_) return true;
        if (d_ == 3) {
            if (v > static_cast<std::uint64_t>(INT32_MAX))
                fail(position() + ": expert id " + std::to_string(v) + " does not fit int32");
            return push(static_cast<std::int32_t>(v));
        }
        return unexpected("a number");
    }
    bool number_float(double, const std::string& s) {
        if (skip_) return true;
        if (d_ == 3) fail(position() + ": expert id " + printable(s) + " is not an integer");
        return unexpected("a number");
    }
    bool string(std::string& s) {
        if (skip_) return true;
        if (in_object_top()) {
            if (pending_ == "dtype") {
                dtype = s;
                return true;
            }
            return object_scalar();
        }
        return unexpected("a string");
    }
    bool binary(nlohmann::json::binary_t&) { return skip_ ? true : unexpected("binary data"); }
    bool start_object(std::size_t) {
        if (skip_) return ++skip_, true;
        if (top_ == Top::Start) {
            top_ = Top::Object;
            return true;
        }
        if (in_object_top()) {
            object_scalar();
            return ++skip_, true;
        }
        return unexpected("an object");
    }
    bool key(std::string& k) {
        if (!skip_) pending_ = k;
        return true;
    }
    bool end_object() {
        if (skip_) return --skip_, true;
        if (!have_data_) fail(": object has no \"data\" list");
        top_ = Top::Done;
        return true;
    }
    bool start_array(std::size_t) {
        if (skip_) return ++skip_, true;
        if (top_ == Top::Start || (in_object_top() && pending_ == "data")) {
            if (have_data_) fail(": \"data\" appears twice");
            if (top_ == Top::Start) top_ = Top::Array;
            have_data_ = true;
            d_ = 1;
            return true;
        }
        if (in_object_top()) {
            object_scalar();
            return ++skip_, true;
        }
        if (d_ == 1) {
            layer_ = 0;
            d_ = 2;
            return true;
        }
        if (d_ == 2) {
            slot_ = 0;
            d_ = 3;
            return true;
        }
        return unexpected("a list");
    }
    bool end_array() {
        if (skip_) return --skip_, true;
        switch (d_) {
        case 3:
            if (slot_ != top_k_)
                fail(": row " + std::to_string(rows) + ", layer " + std::to_string(layer_) + " has " +
                     std::to_string(slot_) + " expert ids, expected top-k " + std::to_string(top_k_));
            ++layer_;
            d_ = 2;
            return true;
        case 2:
            if (layers < 0)
                layers = layer_;
            else if (layer_ != layers)
                fail(": row " + std::to_string(rows) + " has " + std::to_string(layer_) + " layers, expected " +
                     std::to_string(layers) + " (as row 0)");
            ++rows;
            d_ = 1;
            return true;
        default:
            d_ = 0;
            if (top_ == Top::Array) top_ = Top::Done;
            return true;
        }
    }
    bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) {
        failed = true;
        error_pos = pos;
        error_desc = json_error_description(ex);
        return false;
    }

private:
    enum class Top { Start, Array, Object, Done };

    bool in_object_top() const { return top_ == Top::Object && d_ == 0; }
    [[noreturn]] void fail(const std::string& what) const { throw InputError(where_ + what); }
    std::string position() const {
        return ": row " + std::to_string(rows) + ", layer " + std::to_string(layer_) + ", slot " +
               std::to_string(slot_);
    }
    bool push(std::int32_t v) {
        if (ids_.size() >= kMaxRouteValues)
            fail(": more than the per-sample limit of " + std::to_string(kMaxRouteValues) + " route values");
        ids_.push_back(v);
        ++slot_;
        return true;
    }
    bool object_scalar() {
        if (pending_ == "data") fail(": \"data\" is not a list");
        if (pending_ == "dtype") fail(": \"dtype\" is not a string");
        return true;
    }
    bool unexpected(const std::string& kind) {
        if (top_ == Top::Start)
            fail(": expected a [rows][layers][top_k] list or an object with \"data\", found " + kind);
        if (in_object_top()) return object_scalar();
        if (d_ == 1) fail(": row " + std::to_string(rows) + " is " + kind + ", expected a list of layers");
        if (d_ == 2)
            fail(": row " + std::to_string(rows) + ", layer " + std::to_string(layer_) + " is " + kind +
                 ", expected a list of expert ids");
        fail(position() + ": expected an expert id, found " + kind);
    }

    int top_k_;
    std::vector<std::int32_t>& ids_;
    std::string where_;
    Top top_ = Top::Start;
    bool have_data_ = false;
    int d_ = 0;    // depth inside the routes list: 1 rows, 2 layers, 3 expert ids
    int skip_ = 0; // depth inside an ignored member of the record object
    int layer_ = 0, slot_ = 0;
    std::string pending_; // last key of the record object
};

} // namespace

void parse_nested_json(const SourceFile& f, const ModelDescription& m, const EmitFn& emit) {
    const bool lines = json_layout(f).json_lines; // also throws "<path>: empty file"
    const std::string stem = f.stem();
    RouteArray routes;
    routes.top_k = m.top_k;
    NestedRoutesSax sax(m, routes.ids);
    std::size_t k = 0;

    auto record = [&](std::string_view text, std::size_t offset, std::size_t line) {
        SampleMeta meta;
        meta.id = lines ? stem + "#" + std::to_string(k) : stem;
        ++k;
        meta.source_file = f.path.string();
        meta.rows_rule = LengthRule::RowsPlusOne;
        const std::string where = sample_where(f, meta.id);
        sax.reset(where);
        const bool ok = nlohmann::json::sax_parse(text.data(), text.data() + text.size(), &sax);
        if (!ok || sax.failed) {
            std::string msg = f.path.string() + ": ";
            if (line > 0) msg += "line " + std::to_string(line) + ": ";
            throw InputError(msg + "malformed JSON at byte " + std::to_string(offset + sax.error_pos) + ": " +
                             sax.error_desc);
        }
        if (sax.dtype) {
            WireInt t;
            if (!wire_int_from_name(*sax.dtype, t))
                throw InputError(where + ": dtype '" + printable(*sax.dtype) + "' is not an integer type");
        }
        if (sax.rows == 0) throw InputError(where + ": no routed rows");
        routes.rows = sax.rows;
        routes.axis_layers = sax.layers;
        routes.axis_layer_ids = resolve_layer_axis(routes.axis_layers, m, where);
        emit(make_sample_record(routes, m, meta));
    };

    const std::string_view text = text_of(f);
    const std::size_t skip = f.bytes.size() - text.size(); // a BOM
    if (lines) {
        for_each_line(
            text, [&](std::string_view s, std::size_t offset, std::size_t line) { record(s, skip + offset, line); });
    } else {
        record(text, skip, 0);
    }
}

} // namespace routepack::detail
