// The safetensors reader and writer (gpu/safetensors.h): every shard of every shared checkpoint opens
// and rewrites byte for byte, the reference writer's golden bytes, each malformed case of the reference
// table (checkpoint-formats.md §1.4) with its exact message, and the sharded index.
#include "core/util/errors.h"
#include "gpu/safetensors/safetensors.h"
#include "tests/testutil.h"

#include <QtTest>

#include <cstring>
#include <set>
#include <unistd.h>

using namespace routepack;
using namespace routepack::gpu;
namespace fs = std::filesystem;

namespace {

QString q(const std::string& s) {
    return QString::fromStdString(s);
}

/// A safetensors file: u64 LE length of `header`, `header`, then `nbytes` data bytes.
QByteArray st(const QByteArray& header, int nbytes, std::uint64_t n_override = ~std::uint64_t{0}) {
    const std::uint64_t n = n_override == ~std::uint64_t{0} ? static_cast<std::uint64_t>(header.size()) : n_override;
    QByteArray out;
    for (int i = 0; i < 8; ++i)
        out.append(static_cast<char>((n >> (8 * i)) & 0xFF));
    out.append(header);
    for (int i = 0; i < nbytes; ++i)
        out.append(static_cast<char>(i & 0xFF));
    return out;
}

/// what() of InputError, "OK" when it opened, or a description of another outcome.
std::string open_result(const fs::path& p) {
    try {
        (void)SafetensorsFile::open(p);
    } catch (const InputError& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string("<other exception: ") + e.what() + ">";
    }
    return "OK";
}

const char* const kModels[] = {"qwen3_moe", "mixtral", "olmoe", "deepseek_v3", "gpt_oss"};

} // namespace

class TstSafetensors : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void dtypes() {
        QCOMPARE(parse_dtype("BF16").value(), Dtype::BF16);
        QCOMPARE(parse_dtype("F8_E4M3").value(), Dtype::F8_E4M3);
        QVERIFY(!parse_dtype("i32"));
        QVERIFY(!parse_dtype("F8_E4M3FN"));
        QCOMPARE(dtype_bits(Dtype::F4), 4u);
        QCOMPARE(dtype_bits(Dtype::F6_E3M2), 6u);
        QCOMPARE(dtype_bits(Dtype::C64), 64u);
        QCOMPARE(q(std::string(dtype_name(Dtype::U64))), QStringLiteral("U64"));
    }

    void golden_bytes() {
        const std::byte a[3] = {std::byte{1}, std::byte{2}, std::byte{3}};
        std::byte b[8];
        std::byte c[4];
        for (int i = 0; i < 8; ++i)
            b[i] = std::byte(0x10 + i);
        for (int i = 0; i < 4; ++i)
            c[i] = std::byte(0x20 + i);
        const std::vector<TensorData> tensors = {
            {"a", Dtype::U8, {3}, a}, {"b", Dtype::F32, {2}, b}, {"c", Dtype::BF16, {2}, c}};
        const std::string bytes = serialize_safetensors(tensors, {{"format", "pt"}});
        QCOMPARE(bytes.size(), std::size_t{223});
        std::uint64_t n = 0;
        for (int i = 7; i >= 0; --i)
            n = (n << 8) | static_cast<unsigned char>(bytes[i]);
        QCOMPARE(n, std::uint64_t{200});
        const std::string header =
            R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
            R"("c":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},"a":{"dtype":"U8","shape":[3],"data_offsets":[12,15]}})";
        QCOMPARE(header.size(), std::size_t{194});
        QCOMPARE(q(bytes.substr(8, 200)), q(header + std::string(6, ' ')));
        QVERIFY(std::memcmp(bytes.data() + 208, b, 8) == 0);
        QVERIFY(std::memcmp(bytes.data() + 216, c, 4) == 0);
        QVERIFY(std::memcmp(bytes.data() + 220, a, 3) == 0);

        const auto dir = routepack::test::temp_dir(QStringLiteral("st-golden"));
        const auto p = dir / "golden.safetensors";
        write_safetensors(p, tensors, {{"format", "pt"}});
        QVERIFY(routepack::test::read_file(p) == bytes);
        QVERIFY(!fs::exists(p.string() + ".tmp." + std::to_string(::getpid())));
        const auto f = SafetensorsFile::open(p);
        QCOMPARE(f.names(), (std::vector<std::string>{"b", "c", "a"}));
        QCOMPARE(q(f.metadata().at("format")), QStringLiteral("pt"));
        QCOMPARE(f.info("c").dtype, Dtype::BF16);
        QCOMPARE(f.info("a").shape, std::vector<std::uint64_t>{3});
        QCOMPARE(f.info("a").data_begin, std::uint64_t{12});
        QVERIFY(std::memcmp(f.data("a").data(), a, 3) == 0);
        QCOMPARE(f.data("b").size(), std::size_t{8});
        QVERIFY(std::memcmp(f.data("b").data(), b, 8) == 0);
        QCOMPARE(q(open_result(dir / "missing.safetensors"))
                     .startsWith(q((dir / "missing.safetensors").string() + ": IoError")),
                 true);

        // Atomic replace: the old mapping keeps its bytes while the file is rewritten under it.
        write_safetensors(p, {{"z", Dtype::U8, {3}, a}}, {});
        QVERIFY(std::memcmp(f.data("b").data(), b, 8) == 0);
        const auto g = SafetensorsFile::open(p);
        QCOMPARE(g.names(), std::vector<std::string>{"z"});
        QVERIFY(!g.has_metadata());
        fs::remove_all(dir);
    }

    void writer_refusals() {
        const std::byte a[4] = {};
        QVERIFY_THROWS_EXCEPTION(InputError, serialize_safetensors({{"x", Dtype::U8, {3}, a}}, {}));
        QVERIFY_THROWS_EXCEPTION(InputError,
                                 serialize_safetensors({{"x", Dtype::U8, {4}, a}, {"x", Dtype::U8, {4}, a}}, {}));
        QVERIFY_THROWS_EXCEPTION(InputError, serialize_safetensors({{"x", Dtype::F4, {3}, {a, 1}}}, {}));
        // Names with characters that need escaping round-trip.
        const std::string bytes = serialize_safetensors({{"q\"\\\n\x01é", Dtype::U8, {4}, a}}, {{"k", "v\tw"}});
        const auto dir = routepack::test::temp_dir(QStringLiteral("st-escape"));
        routepack::test::write_file(dir / "e.safetensors", bytes);
        const auto f = SafetensorsFile::open(dir / "e.safetensors");
        QCOMPARE(f.names(), std::vector<std::string>{"q\"\\\n\x01é"});
        QCOMPARE(q(f.metadata().at("k")), QStringLiteral("v\tw"));
        QVERIFY(bytes.find("\\u0001") != std::string::npos);
        fs::remove_all(dir);
    }

    void malformed_data() {
        QTest::addColumn<QByteArray>("file");
        QTest::addColumn<QString>("expected"); // "OK" or the message after "<file>: "
        const QByteArray i32 = R"("x":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]})";
        auto obj = [](const QByteArray& body) { return "{" + body + "}"; };

        QTest::newRow("valid") << st(obj(i32), 16) << "OK";
        // Deviation from the reference (which keeps the last entry, or reports InvalidOffset).
        QTest::newRow("duplicate tensor, identical") << st(obj(i32 + "," + i32), 16)
                                                     << "DuplicateTensor: tensor 'x': appears more than once in the "
                                                        "header (refused; the reference keeps the last)";
        QTest::newRow("duplicate tensor, empty then real")
            << st(obj(R"("x":{"dtype":"I32","shape":[0],"data_offsets":[0,0]},)" + i32), 16)
            << "DuplicateTensor: tensor 'x': appears more than once in the header (refused; the reference keeps the "
               "last)";
        QTest::newRow("duplicate tensor, different offsets")
            << st(obj(i32 + R"(,"x":{"dtype":"I32","shape":[2,2],"data_offsets":[16,32]})"), 32)
            << "DuplicateTensor: tensor 'x': appears more than once in the header (refused; the reference keeps the "
               "last)";
        QTest::newRow("duplicate __metadata__")
            << st(obj(R"("__metadata__":{"a":"b"},"__metadata__":{"a":"c"},)" + i32), 16)
            << "InvalidHeaderDeserialization: __metadata__: duplicate field";
        QTest::newRow("duplicate field in entry")
            << st(obj(R"("x":{"dtype":"I32","dtype":"I32","shape":[2,2],"data_offsets":[0,16]})"), 16)
            << "InvalidHeaderDeserialization: tensor 'x' dtype: duplicate field";
        QTest::newRow("unknown extra field")
            << st(obj(R"("x":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16],"foo":1})"), 16) << "OK";
        QTest::newRow("metadata null") << st(obj(R"("__metadata__":null,)" + i32), 16) << "OK";
        QTest::newRow("metadata key dtype") << st(obj(R"("__metadata__":{"dtype":"x"},)" + i32), 16) << "OK";
        QTest::newRow("metadata non-string value") << st(obj(R"("__metadata__":{"a":1},)" + i32), 16)
                                                   << "InvalidHeaderDeserialization: __metadata__.a is 1, not a string";
        QTest::newRow("metadata array")
            << st(obj(R"("__metadata__":["a"],)" + i32), 16)
            << "InvalidHeaderDeserialization: __metadata__ is a list, not a map of string to string";
        QTest::newRow("metadata a string")
            << st(obj(R"("__metadata__":"x",)" + i32), 16)
            << "InvalidHeaderDeserialization: __metadata__ is \"x\", not a map of string to string";
        QTest::newRow("metadata null value") << st(obj(R"("__metadata__":{"a":null},)" + i32), 16)
                                             << "InvalidHeaderDeserialization: __metadata__.a is null, not a string";
        QTest::newRow("metadata key escaped") << st(obj(R"("__metadata__":{"a\nb":1},)" + i32), 16)
                                              << "InvalidHeaderDeserialization: __metadata__.a\\nb is 1, not a string";
        QTest::newRow("leading whitespace") << st("  \n" + obj(i32), 16) << "OK";
        QTest::newRow("BOM") << st("\xEF\xBB\xBF" + obj(i32), 16)
                             << "InvalidHeaderDeserialization: header: byte order mark before the JSON object";
        QTest::newRow("trailing whitespace") << st(obj(i32) + " \t\r\n", 16) << "OK";
        QTest::newRow("trailing NUL")
            << st(obj(i32) + QByteArray(2, '\0'), 16)
            << "InvalidHeaderDeserialization: header: not valid JSON (error at header byte 57)";
        QTest::newRow("N not a multiple of 8") << st(obj(i32), 16) << "OK"; // 57 bytes
        QTest::newRow("empty object, empty buffer") << st("{}", 0) << "OK";
        QTest::newRow("entries out of offset order")
            << st(obj(R"("b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]})"),
                  4)
            << "OK";
        QTest::newRow("overlap")
            << st(obj(i32 + R"(,"y":{"dtype":"I32","shape":[4],"data_offsets":[8,24]})"), 24)
            << "InvalidOffset: tensor 'y' data_offsets [8, 24]: expected to begin at 16 (a gap or an overlap)";
        QTest::newRow("hole")
            << st(obj(i32 + R"(,"y":{"dtype":"I32","shape":[4],"data_offsets":[20,36]})"), 36)
            << "InvalidOffset: tensor 'y' data_offsets [20, 36]: expected to begin at 16 (a gap or an overlap)";
        QTest::newRow("first offset 8")
            << st(obj(R"("x":{"dtype":"I32","shape":[2,2],"data_offsets":[8,24]})"), 24)
            << "InvalidOffset: tensor 'x' data_offsets [8, 24]: expected to begin at 0 (a gap or an overlap)";
        QTest::newRow("end before begin")
            << st(obj(i32 + R"(,"y":{"dtype":"I32","shape":[0],"data_offsets":[16,8]})"), 16)
            << "InvalidOffset: tensor 'y' data_offsets [16, 8]: end before begin";
        QTest::newRow("trailing data bytes")
            << st(obj(i32), 17)
            << "MetadataIncompleteBuffer: data: tensors cover 16 bytes, but the file holds 17 after the header";
        QTest::newRow("truncated data")
            << st(obj(i32), 15)
            << "MetadataIncompleteBuffer: data: tensors cover 16 bytes, but the file holds 15 after the header";
        QTest::newRow("N past EOF")
            << st(obj(i32), 0, 1000)
            << "InvalidHeaderLength: header length 1000 runs past the end of the file (65 bytes)";
        QTest::newRow("file < 8 bytes") << QByteArray("\x02\0\0\0\0", 5)
                                        << "HeaderTooSmall: file is 5 bytes, less than the 8-byte header length";
        QTest::newRow("N = 100000001")
            << st(obj(i32), 16, 100000001)
            << "HeaderTooLarge: header length 100000001 exceeds the limit of 100000000 bytes";
        QTest::newRow("invalid UTF-8 in key")
            << st(R"({"x)" + QByteArray("\xC3\x28", 2) + R"(":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})",
                  16)
            << "InvalidHeader: header: invalid UTF-8 at header byte 3";
        QTest::newRow("shape -2")
            << st(obj(R"("x":{"dtype":"I32","shape":[-2],"data_offsets":[0,16]})"), 16)
            << "InvalidHeaderDeserialization: tensor 'x' shape: expected non-negative integers, got -2";
        QTest::newRow("float offsets")
            << st(obj(R"("x":{"dtype":"I32","shape":[2,2],"data_offsets":[0.0,16.0]})"), 16)
            << "InvalidHeaderDeserialization: tensor 'x' data_offsets: expected non-negative integers, got 0.0";
        QTest::newRow("3 offsets")
            << st(obj(R"("x":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16,16]})"), 16)
            << "InvalidHeaderDeserialization: tensor 'x' data_offsets: expected 2 offsets, got 3";
        QTest::newRow("missing shape") << st(obj(R"("x":{"dtype":"I32","data_offsets":[0,16]})"), 16)
                                       << "InvalidHeaderDeserialization: tensor 'x': missing field shape";
        QTest::newRow("dtype i32") << st(obj(R"("x":{"dtype":"i32","shape":[2,2],"data_offsets":[0,16]})"), 16)
                                   << "InvalidHeaderDeserialization: tensor 'x' dtype: unknown dtype 'i32'";
        QTest::newRow("dtype F8_E4M3FN") << st(obj(R"("x":{"dtype":"F8_E4M3FN","shape":[16],"data_offsets":[0,16]})"),
                                               16)
                                         << "InvalidHeaderDeserialization: tensor 'x' dtype: unknown dtype 'F8_E4M3FN'";
        QTest::newRow("shape 2^64")
            << st(obj(R"("x":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,16]})"), 16)
            << "InvalidHeaderDeserialization: tensor 'x' shape: expected non-negative integers, got "
               "1.8446744073709552e+19";
        QTest::newRow("size overflow")
            << st(obj(R"("x":{"dtype":"U64","shape":[4294967296,4294967296],"data_offsets":[0,16]})"), 16)
            << "ValidationOverflow: tensor 'x' shape [4294967296, 4294967296]: size overflows 64 bits";
        QTest::newRow("I32 [2,2] with [0,12]")
            << st(obj(R"("x":{"dtype":"I32","shape":[2,2],"data_offsets":[0,12]})"), 12)
            << "TensorInvalidInfo: tensor 'x' data_offsets [0, 12]: 12 bytes, but I32 shape [2, 2] needs 16";
        QTest::newRow("F4 shape [3]")
            << st(obj(R"("x":{"dtype":"F4","shape":[3],"data_offsets":[0,2]})"), 2)
            << "MisalignedSlice: tensor 'x' shape [3]: 3 elements of F4 are not a whole number of bytes";
        QTest::newRow("two zero-size at [0,0]")
            << st(obj(R"("a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"F32","shape":[2,0],"data_offsets":[0,0]})"),
                  0)
            << "OK";
        QTest::newRow("zero-size at the end")
            << st(obj(i32 + R"(,"z":{"dtype":"U8","shape":[0],"data_offsets":[16,16]})"), 16) << "OK";
        QTest::newRow("empty tensor name")
            << st(obj(R"("":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]})"), 16) << "OK";
        QTest::newRow("scalar") << st(obj(R"("s":{"dtype":"F64","shape":[],"data_offsets":[0,8]})"), 8) << "OK";
        QTest::newRow("top level array") << st("[]", 0)
                                         << "InvalidHeaderDeserialization: header: expected a JSON object, got array";
        QTest::newRow("trailing comma")
            << st(obj(i32 + ","), 16)
            << "InvalidHeaderDeserialization: header: not valid JSON (error at header byte 57)";
        QTest::newRow("entry not an object")
            << st(R"({"x":1})", 0) << "InvalidHeaderDeserialization: tensor 'x': expected an object, got number";
    }

    void malformed() {
        QFETCH(QByteArray, file);
        QFETCH(QString, expected);
        const auto dir = routepack::test::temp_dir(QStringLiteral("st-bad"));
        const auto p = dir / "case.safetensors";
        routepack::test::write_file(p, file.toStdString());
        const std::string got = open_result(p);
        QCOMPARE(q(got), expected == QStringLiteral("OK") ? expected : q(p.string() + ": ") + expected);
        fs::remove_all(dir);
    }

    void out_of_order_names_in_file_order() {
        const auto dir = routepack::test::temp_dir(QStringLiteral("st-order"));
        const auto p = dir / "o.safetensors";
        routepack::test::write_file(
            p,
            st(R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
               4)
                .toStdString());
        const auto f = SafetensorsFile::open(p);
        QCOMPARE(f.names(), (std::vector<std::string>{"a", "b"}));
        QCOMPARE(static_cast<int>(f.data("b")[0]), 2);
        QVERIFY_THROWS_EXCEPTION(InputError, f.info("c"));
        fs::remove_all(dir);
    }

    void checkpoints_rewrite_byte_for_byte_data() {
        QTest::addColumn<QString>("model");
        for (const char* m : kModels)
            QTest::newRow(m) << QString::fromLatin1(m);
    }

    void checkpoints_rewrite_byte_for_byte() {
        QFETCH(QString, model);
        ROUTEPACK_REQUIRE_SHARED(ckpt, "checkpoints/" + model.toStdString() + "/checkpoint");
        const auto dir = routepack::test::temp_dir(QStringLiteral("st-rewrite"));
        int shards = 0;
        for (const auto& entry : fs::directory_iterator(ckpt)) {
            if (entry.path().extension() != ".safetensors") continue;
            ++shards;
            const auto f = SafetensorsFile::open(entry.path());
            QVERIFY(!f.tensors().empty());
            std::vector<TensorData> tensors;
            for (const auto& t : f.tensors())
                tensors.push_back({t.name, t.dtype, t.shape, f.data(t)});
            const auto out = dir / entry.path().filename();
            write_safetensors(out, tensors, f.metadata());
            const std::string original = routepack::test::read_file(entry.path());
            const std::string rewritten = routepack::test::read_file(out);
            QVERIFY2(original == rewritten, qPrintable(q(entry.path().string() + " differs after rewrite")));
            const auto g = SafetensorsFile::open(out);
            QCOMPARE(g.names(), f.names());
        }
        QVERIFY(shards >= 2);
        fs::remove_all(dir);
    }

    void checkpoint_index_data() { checkpoints_rewrite_byte_for_byte_data(); }

    void checkpoint_index() {
        QFETCH(QString, model);
        ROUTEPACK_REQUIRE_SHARED(ckpt, "checkpoints/" + model.toStdString() + "/checkpoint");
        const auto idx = read_index(ckpt);
        QVERIFY(!idx.weight_map.empty());
        QVERIFY(idx.total_size.has_value());
        std::uint64_t total = 0;
        std::set<std::string> in_shards;
        for (const auto& shard : idx.shards()) {
            QVERIFY2(fs::is_regular_file(ckpt / shard), qPrintable(q(shard)));
            const auto f = SafetensorsFile::open(ckpt / shard);
            for (const auto& t : f.tensors()) {
                total += t.nbytes();
                in_shards.insert(t.name);
                const auto it = idx.weight_map.find(t.name);
                QVERIFY2(it != idx.weight_map.end(), qPrintable(q(t.name + " is not in the index")));
                QCOMPARE(q(it->second), q(shard));
            }
        }
        for (const auto& [name, shard] : idx.weight_map) {
            QVERIFY2(in_shards.count(name), qPrintable(q(name + " is not in " + shard)));
            QVERIFY(SafetensorsFile::open(ckpt / shard).contains(name));
        }
        QCOMPARE(total, *idx.total_size);
    }

    void index_refusals() {
        const auto dir = routepack::test::temp_dir(QStringLiteral("st-index"));
        const auto file = (dir / "model.safetensors.index.json").string();
        routepack::test::write_file(file,
                                    R"({"metadata":{"total_size":4,"x":"y"},"weight_map":{"a":"s.safetensors"}})");
        const auto idx = read_index(dir);
        QCOMPARE(idx.total_size.value(), std::uint64_t{4});
        QCOMPARE(q(idx.metadata.at("x")), QStringLiteral("y"));
        QCOMPARE(idx.shards(), std::vector<std::string>{"s.safetensors"});
        routepack::test::write_file(file, R"({"weight_map":{"a":"../s.safetensors"}})");
        try {
            read_index(dir);
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(q(e.what()),
                     q(file + ": InvalidIndex: weight_map 'a': shard '../s.safetensors' is not a plain file name"));
        }
        routepack::test::write_file(file, R"({"metadata":{}})");
        try {
            read_index(dir);
            QFAIL("no error");
        } catch (const InputError& e) {
            QCOMPARE(q(e.what()), q(file + ": weight_map is missing"));
        }
        fs::remove_all(dir);
    }

    void index_errors_data() {
        QTest::addColumn<QString>("index");    // the text of model.safetensors.index.json
        QTest::addColumn<QString>("expected"); // "OK" or the message after the file's path
        const auto row = [](const char* name, const std::string& index, const std::string& expected) {
            QTest::newRow(name) << q(index) << q(expected);
        };
        const std::string map = R"("weight_map": {"a": "s.safetensors"})";
        const std::string total = ": metadata.total_size is ";
        const std::string u64 = ", not an integer in 0..18446744073709551615";
        row("valid", "{" + map + "}", "OK");
        row("metadata null", R"({"metadata": null, )" + map + "}", "OK");
        row("total_size 2^64 - 1", R"({"metadata": {"total_size": 18446744073709551615}, )" + map + "}", "OK");
        row("top level a list", "[]", " is [], not an object");
        row("metadata a list", R"({"metadata": [1], )" + map + "}", ": metadata is a list, not an object");
        row("total_size negative", R"({"metadata": {"total_size": -1}, )" + map + "}", total + "-1" + u64);
        row("total_size a float", R"({"metadata": {"total_size": 4.0}, )" + map + "}", total + "4.0" + u64);
        row("total_size null", R"({"metadata": {"total_size": null}, )" + map + "}", total + "null" + u64);
        row("total_size a string", R"({"metadata": {"total_size": "4"}, )" + map + "}", total + "\"4\"" + u64);
        row("weight_map missing", R"({"metadata": {}})", ": weight_map is missing");
        row("weight_map a list", R"({"weight_map": ["a"]})", ": weight_map is a list, not an object");
        row("weight_map null", R"({"weight_map": null})", ": weight_map is null, not an object");
        row("shard a number", R"({"weight_map": {"a": 5}})", ": weight_map.a is 5, not a shard file name");
        row("shard a list, key escaped", R"({"weight_map": {"a\u001b": [1]}})",
            ": weight_map.a\\x1b is a list, not a shard file name");
        row("shard not a plain name", R"({"weight_map": {"a": "../s.safetensors"}})",
            ": InvalidIndex: weight_map 'a': shard '../s.safetensors' is not a plain file name");
    }

    void index_errors() {
        QFETCH(QString, index);
        QFETCH(QString, expected);
        const auto dir = routepack::test::temp_dir(QStringLiteral("st-index-errors"));
        const auto file = (dir / "model.safetensors.index.json").string();
        routepack::test::write_file(file, index.toStdString());
        std::string got = "OK";
        try {
            (void)read_index(dir);
        } catch (const InputError& e) {
            got = e.what();
        }
        QCOMPARE(q(got), expected == QStringLiteral("OK") ? expected : q(file) + expected);
        fs::remove_all(dir);
    }
};

QTEST_GUILESS_MAIN(TstSafetensors)
#include "tst_safetensors.moc"
