// idorder_oracle.cc — the C++ standard library's own std::unordered_map,
// keyed as DuckDB's case_insensitive_map_t is (StringUtil::CIHash,
// StringUtil::CIEquals), driven by test_idorder.c to check
// engine/verbs_idorder.c's simulation of its iteration order.
//
// Input, one operation per line: "I <hex name>" (map[name] = n), "E <hex
// name>" (erase), "O" (print the order). Output, for each "O": the names in
// iteration order, hex, separated by spaces, one line.
#include <cstdint>
#include <iostream>
#include <string>
#include <unordered_map>

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

struct CIHash {
    uint64_t operator()(const std::string &s) const {
        uint32_t h = 0;
        for (char c : s) {
            h += static_cast<uint32_t>(static_cast<int32_t>(static_cast<signed char>(lower(c))));
            h += h << 10;
            h ^= h >> 6;
        }
        h += h << 3;
        h ^= h >> 11;
        h += h << 15;
        return h;
    }
};

struct CIEq {
    bool operator()(const std::string &a, const std::string &b) const {
        if (a.size() != b.size()) return false;
        for (size_t i = 0; i < a.size(); i++)
            if (lower(a[i]) != lower(b[i])) return false;
        return true;
    }
};

std::string unhex(const std::string &h) {
    std::string out;
    for (size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
    return out;
}

std::string hex(const std::string &s) {
    static const char *d = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out += d[c >> 4];
        out += d[c & 15];
    }
    return out;
}

} // namespace

int main() {
    std::unordered_map<std::string, int, CIHash, CIEq> m;
    std::string op, arg;
    int n = 0;
    while (std::cin >> op) {
        if (op == "O") {
            bool first = true;
            for (auto &e : m) {
                std::cout << (first ? "" : " ") << hex(e.first);
                first = false;
            }
            std::cout << "\n";
            continue;
        }
        std::cin >> arg;
        if (op == "I") m[unhex(arg)] = n++;
        else if (op == "E") m.erase(unhex(arg));
    }
    return 0;
}
