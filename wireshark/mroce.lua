-- mroce.lua: Wireshark dissector for the mroce transport (wire version 1, SPEC.md §3-§5).
--
-- Usage:  tshark -X lua_script:wireshark/mroce.lua -r capture.pcap -V
--         wireshark -X lua_script:wireshark/mroce.lua capture.pcap
-- or copy this file into the personal Lua plugins folder (Help > About > Folders).
--
-- Hook: the dissector takes UDP port 4791 over from Wireshark's InfiniBand/RRoCE dissector.
-- Frames whose BTH opcode is an mroce opcode (0xC0-0xCB; optionally the whole vendor range
-- 0xC0-0xFF) are dissected here: BTH, mroce headers, payload, pad and ICRC, with the ICRC
-- recomputed and every receive check of SPEC.md §3.8 reported as expert info. Every other
-- opcode (IBTA RC, CNP, ...) is handed unchanged to the built-in InfiniBand dissector, so
-- RoCEv2 traffic on the same port looks exactly as without this script. The preference
-- "Also show Wireshark's InfiniBand BTH" additionally runs the built-in dissector on mroce
-- frames (for its infiniband.bth.* display filters).
--
-- Field names follow SPEC.md: mroce.bth.*, mroce.mrh.*, mroce.sdh.*, mroce.rph.*, mroce.rqh.*,
-- mroce.akh.* (SACK words mroce.akh.sack.w0 .. w7), mroce.nkh.*, mroce.cmh.*, mroce.icrc.
-- Expert messages that correspond to a receiver's decode error start with the error name of
-- SPEC.md §9.1 in brackets, e.g. "[BadIcrc]", "[Truncated]", "[BadField]".

local MROCE_PORT = 4791

local mroce = Proto("mroce", "mroce transport")

-- ---------------------------------------------------------------------------------------
-- 32-bit bit operations: bit32 on Lua 5.2 (Wireshark <= 4.2), native operators on 5.3+.
-- ---------------------------------------------------------------------------------------
local bit = bit32
if not bit then
    bit = load([[
        return {
            band = function(a, b) return a & b end,
            bor = function(a, b) return a | b end,
            bxor = function(a, b) return a ~ b end,
            rshift = function(a, n) return (a & 0xFFFFFFFF) >> n end,
            lshift = function(a, n) return (a << n) & 0xFFFFFFFF end,
        }
    ]])()
end
local band, bor, bxor, rshift, lshift = bit.band, bit.bor, bit.bxor, bit.rshift, bit.lshift

-- CRC-32 of IEEE 802.3 (reflected polynomial 0xEDB88320, init and final XOR 0xFFFFFFFF),
-- table driven: SPEC.md §3.7.
local CRC_TABLE = {}
for i = 0, 255 do
    local c = i
    for _ = 1, 8 do
        if band(c, 1) ~= 0 then
            c = bxor(rshift(c, 1), 0xEDB88320)
        else
            c = rshift(c, 1)
        end
    end
    CRC_TABLE[i] = c
end

local function crc_update(crc, s)
    for i = 1, #s do
        crc = bxor(rshift(crc, 8), CRC_TABLE[band(bxor(crc, s:byte(i)), 0xFF)])
    end
    return crc
end

local function crc32(s) return bxor(crc_update(0xFFFFFFFF, s), 0xFFFFFFFF) end
assert(crc32("123456789") == 0xCBF43926, "mroce.lua: CRC-32 self-test failed")

-- Replace the bytes at the given 0-based offsets of the (short) string s by 0xFF.
local unpack = table.unpack or unpack
local function mask_ff(s, offsets)
    local b = { s:byte(1, -1) }
    for _, o in ipairs(offsets) do
        if o < #b then b[o + 1] = 0xFF end
    end
    return string.char(unpack(b))
end

-- ---------------------------------------------------------------------------------------
-- Constants (SPEC.md §5.1, §4, §7.2)
-- ---------------------------------------------------------------------------------------
local OP = {
    WRITE = 0xC0, SEND = 0xC1, ACK = 0xC2, NAK = 0xC3, PROBE = 0xC4,
    CONNECT = 0xC8, CONNECT_ACK = 0xC9, DISCONNECT = 0xCA, DISCONNECT_ACK = 0xCB,
}
local OPCODE_NAMES = {
    [0xC0] = "WRITE", [0xC1] = "SEND", [0xC2] = "ACK", [0xC3] = "NAK", [0xC4] = "PROBE",
    [0xC8] = "CONNECT", [0xC9] = "CONNECT_ACK", [0xCA] = "DISCONNECT", [0xCB] = "DISCONNECT_ACK",
}
local MRH_LEN, SDH_LEN, RPH_LEN, RQH_LEN, AKH_LEN, NKH_LEN, CMH_LEN = 16, 16, 12, 4, 56, 12, 28
local BTH_LEN, ICRC_LEN = 12, 4
local MAX_STREAMS = 1024
local SYNDROMES = { [1] = "REMOTE_ACCESS", [2] = "REMOTE_INVALID" }
local ICRC_STATUS = { [0] = "Good", [1] = "Bad", [2] = "Unverified" }

-- ---------------------------------------------------------------------------------------
-- Fields
-- ---------------------------------------------------------------------------------------
local F = {}
local function field(key, ctor, ...) F[key] = ctor(...) end

field("opcode", ProtoField.uint8, "mroce.opcode", "Packet type", base.HEX, OPCODE_NAMES)
-- BTH (§3.5), mroce's own view: Wireshark's is infiniband.bth.*
field("bth", ProtoField.bytes, "mroce.bth", "BTH")
field("bth_opcode", ProtoField.uint8, "mroce.bth.opcode", "OpCode", base.HEX, OPCODE_NAMES)
field("bth_se", ProtoField.bool, "mroce.bth.se", "SE", 8, nil, 0x80)
field("bth_m", ProtoField.bool, "mroce.bth.m", "M", 8, nil, 0x40)
field("bth_padcnt", ProtoField.uint8, "mroce.bth.padcnt", "PadCnt", base.DEC, nil, 0x30)
field("bth_tver", ProtoField.uint8, "mroce.bth.tver", "TVer", base.DEC, nil, 0x0F)
field("bth_pkey", ProtoField.uint16, "mroce.bth.p_key", "P_Key", base.HEX)
field("bth_resv8", ProtoField.uint8, "mroce.bth.reserved", "Reserved", base.HEX)
field("bth_destqp", ProtoField.uint24, "mroce.bth.destqp", "DestQP", base.HEX)
field("bth_ackreq", ProtoField.bool, "mroce.bth.ackreq", "AckReq", 8, nil, 0x80)
field("bth_resv7", ProtoField.uint8, "mroce.bth.reserved7", "Reserved", base.HEX, nil, 0x7F)
field("bth_psn", ProtoField.uint24, "mroce.bth.psn", "PSN", base.HEX)
-- MRH (§4.1)
field("mrh", ProtoField.bytes, "mroce.mrh", "MRH")
field("mrh_version", ProtoField.uint8, "mroce.mrh.version", "Version", base.DEC, nil, 0xF0)
field("mrh_flags", ProtoField.uint8, "mroce.mrh.flags", "Flags", base.HEX, nil, 0x0F)
field("mrh_retx", ProtoField.bool, "mroce.mrh.flags.retx", "RETX", 8, nil, 0x01)
field("mrh_path", ProtoField.uint8, "mroce.mrh.path", "Path", base.DEC)
field("mrh_plane", ProtoField.uint8, "mroce.mrh.plane", "Plane", base.DEC)
field("mrh_reserved", ProtoField.uint8, "mroce.mrh.reserved", "Reserved", base.HEX)
field("mrh_psn", ProtoField.uint32, "mroce.mrh.psn", "PSN", base.HEX)
field("mrh_floor", ProtoField.uint32, "mroce.mrh.floor", "Floor", base.HEX)
field("mrh_timestamp", ProtoField.uint32, "mroce.mrh.timestamp", "Timestamp", base.DEC)
-- SDH (§4.2)
field("sdh", ProtoField.bytes, "mroce.sdh", "SDH")
field("sdh_stream", ProtoField.uint16, "mroce.sdh.stream", "Stream", base.DEC)
field("sdh_reserved", ProtoField.uint16, "mroce.sdh.reserved", "Reserved", base.HEX)
field("sdh_msgseq", ProtoField.uint32, "mroce.sdh.msgseq", "MsgSeq", base.DEC)
field("sdh_offset", ProtoField.uint32, "mroce.sdh.offset", "Offset", base.DEC)
field("sdh_msglen", ProtoField.uint32, "mroce.sdh.msglen", "MsgLen", base.DEC)
-- RPH (§4.3), RQH (§4.3a)
field("rph", ProtoField.bytes, "mroce.rph", "RPH")
field("rph_va", ProtoField.uint64, "mroce.rph.va", "VA", base.HEX)
field("rph_rkey", ProtoField.uint32, "mroce.rph.r_key", "R_Key", base.HEX)
field("rqh", ProtoField.bytes, "mroce.rqh", "RQH")
field("rqh_rsn", ProtoField.uint32, "mroce.rqh.rsn", "RSN", base.DEC)
-- AKH (§4.4)
field("akh", ProtoField.bytes, "mroce.akh", "AKH")
field("akh_path", ProtoField.uint8, "mroce.akh.path", "Path", base.DEC)
field("akh_flags", ProtoField.uint8, "mroce.akh.flags", "Flags", base.HEX)
field("akh_probe", ProtoField.bool, "mroce.akh.flags.probe", "PROBE", 8, nil, 0x01)
field("akh_announce", ProtoField.bool, "mroce.akh.flags.announce", "ANNOUNCE", 8, nil, 0x02)
field("akh_ecncount", ProtoField.uint16, "mroce.akh.ecncount", "EcnCount", base.DEC)
field("akh_pktcount", ProtoField.uint16, "mroce.akh.pktcount", "PktCount", base.DEC)
field("akh_reserved", ProtoField.uint16, "mroce.akh.reserved", "Reserved", base.HEX)
field("akh_base", ProtoField.uint32, "mroce.akh.base", "Base", base.HEX)
field("akh_cum", ProtoField.uint32, "mroce.akh.cum", "Cum", base.HEX)
field("akh_tsecho", ProtoField.uint32, "mroce.akh.tsecho", "TsEcho", base.DEC)
field("akh_ratehint", ProtoField.uint32, "mroce.akh.ratehint", "RateHint (Mb/s)", base.DEC)
field("akh_sack", ProtoField.bytes, "mroce.akh.sack", "SACK")
for k = 0, 7 do
    field("akh_sack_w" .. k, ProtoField.uint32, "mroce.akh.sack.w" .. k, "SACK word " .. k, base.HEX)
end
field("akh_sack_count", ProtoField.uint16, "mroce.akh.sack.count", "PSNs acknowledged", base.DEC)
field("akh_sack_highest", ProtoField.uint32, "mroce.akh.sack.highest", "Highest acknowledged PSN", base.HEX)
field("akh_sack_missing", ProtoField.string, "mroce.akh.sack.missing", "Missing PSNs below the highest")
-- NKH (§4.5)
field("nkh", ProtoField.bytes, "mroce.nkh", "NKH")
field("nkh_syndrome", ProtoField.uint8, "mroce.nkh.syndrome", "Syndrome", base.DEC, SYNDROMES)
field("nkh_reserved", ProtoField.uint8, "mroce.nkh.reserved", "Reserved", base.HEX)
field("nkh_stream", ProtoField.uint16, "mroce.nkh.stream", "Stream", base.DEC)
field("nkh_msgseq", ProtoField.uint32, "mroce.nkh.msgseq", "MsgSeq", base.DEC)
field("nkh_offset", ProtoField.uint32, "mroce.nkh.offset", "Offset", base.DEC)
-- CMH (§4.6)
field("cmh", ProtoField.bytes, "mroce.cmh", "CMH")
field("cmh_reserved", ProtoField.uint8, "mroce.cmh.reserved", "Reserved", base.HEX)
field("cmh_srcconn", ProtoField.uint24, "mroce.cmh.srcconn", "SrcConn", base.HEX)
field("cmh_isn", ProtoField.uint32, "mroce.cmh.isn", "ISN", base.HEX)
field("cmh_paths", ProtoField.uint8, "mroce.cmh.paths", "Paths", base.DEC)
field("cmh_planes", ProtoField.uint8, "mroce.cmh.planes", "Planes", base.DEC)
field("cmh_mtu", ProtoField.uint16, "mroce.cmh.mtu", "MTU", base.DEC)
field("cmh_streams", ProtoField.uint16, "mroce.cmh.streams", "Streams", base.DEC)
field("cmh_reason", ProtoField.uint16, "mroce.cmh.reason", "Reason", base.DEC)
field("cmh_rxcapacity", ProtoField.uint32, "mroce.cmh.rxcapacity", "RxCapacity (Mb/s)", base.DEC)
field("cmh_nonce", ProtoField.uint64, "mroce.cmh.nonce", "Nonce", base.HEX)
-- Payload, pad, ICRC (§3.6, §3.7)
field("payload", ProtoField.bytes, "mroce.payload", "Payload")
field("payload_len", ProtoField.uint32, "mroce.payload.len", "Payload length", base.DEC)
field("pad", ProtoField.bytes, "mroce.pad", "Pad")
field("undecoded", ProtoField.bytes, "mroce.undecoded", "Undecoded body")
field("icrc", ProtoField.uint32, "mroce.icrc", "ICRC", base.HEX)
field("icrc_status", ProtoField.uint8, "mroce.icrc.status", "ICRC status", base.DEC, ICRC_STATUS)
field("icrc_computed", ProtoField.uint32, "mroce.icrc.computed", "ICRC computed", base.HEX)

local field_list = {}
for _, f in pairs(F) do field_list[#field_list + 1] = f end
mroce.fields = field_list

-- Expert infos. Severity ERROR = a conforming receiver drops the frame (SPEC.md §3.8, §9.1);
-- WARN = a field that must be sent as specified but that receivers do not check.
local E = {
    truncated = ProtoExpert.new("mroce.truncated", "Truncated mroce frame", expert.group.MALFORMED, expert.severity.ERROR),
    bad_icrc = ProtoExpert.new("mroce.icrc.bad", "Bad ICRC", expert.group.CHECKSUM, expert.severity.ERROR),
    icrc_unverified = ProtoExpert.new("mroce.icrc.unverified", "ICRC not verified", expert.group.CHECKSUM, expert.severity.NOTE),
    bad_tver = ProtoExpert.new("mroce.bad_tver", "Bad BTH TVer", expert.group.MALFORMED, expert.severity.ERROR),
    unknown_opcode = ProtoExpert.new("mroce.unknown_opcode", "Undefined mroce opcode", expert.group.MALFORMED, expert.severity.ERROR),
    bad_version = ProtoExpert.new("mroce.bad_version", "Bad MRH version", expert.group.MALFORMED, expert.severity.ERROR),
    bad_field = ProtoExpert.new("mroce.bad_field", "Invalid field", expert.group.MALFORMED, expert.severity.ERROR),
    reserved = ProtoExpert.new("mroce.reserved_nonzero", "Reserved bits not zero", expert.group.PROTOCOL, expert.severity.WARN),
    sender = ProtoExpert.new("mroce.sender_rule", "Sender rule violated", expert.group.PROTOCOL, expert.severity.WARN),
}
mroce.experts = { E.truncated, E.bad_icrc, E.icrc_unverified, E.bad_tver, E.unknown_opcode, E.bad_version,
    E.bad_field, E.reserved, E.sender }

mroce.prefs.vendor_range = Pref.bool("Claim all vendor opcodes 0xC0-0xFF", false,
    "Dissect every opcode 0xC0-0xFF as mroce (undefined ones flagged). Off: only 0xC0-0xCB; other "
        .. "vendor opcodes go to the InfiniBand dissector.")
mroce.prefs.builtin_bth = Pref.bool("Also show Wireshark's InfiniBand BTH", false,
    "Run Wireshark's own InfiniBand (RRoCE) dissector on mroce frames too, for its infiniband.bth.* fields.")
mroce.prefs.check_icrc = Pref.bool("Verify the ICRC", true, "Recompute the invariant CRC of SPEC.md §3.7.")

-- ---------------------------------------------------------------------------------------
-- Helpers
-- ---------------------------------------------------------------------------------------
local f_ip = Field.new("ip")
local f_udp = Field.new("udp")

local udp_table = DissectorTable.get("udp.port")
local builtin = udp_table:get_dissector(MROCE_PORT) -- Wireshark's InfiniBand/RRoCE handle
local data_dissector = Dissector.get("data")

local function hex32(v) return string.format("0x%08x", v) end

local function trailing_ones(w)
    local n = 0
    while n < 32 and band(w, lshift(1, n)) ~= 0 do n = n + 1 end
    return n
end

local function popcount(w)
    local n = 0
    while w ~= 0 do
        w = band(w, w - 1)
        n = n + 1
    end
    return n
end

local function u32add(a, b) return (a + b) % 4294967296 end
local function u32sub(a, b) return (a - b) % 4294967296 end

-- The ICRC of SPEC.md §3.7 over IPv4 header, UDP header and the UDP payload without its last
-- 4 bytes. Returns nil when the IPv4/UDP headers are not available (e.g. IPv6).
local function compute_icrc(tvb)
    local ips, udps = { f_ip() }, { f_udp() }
    local ip, udp = ips[#ips], udps[#udps]
    if not ip or not udp or ip.range:len() ~= 20 or udp.range:len() < 8 then return nil end
    local iph = mask_ff(ip.range:raw(), { 1, 8, 10, 11 })
    local udph = mask_ff(udp.range:raw(0, 8), { 6, 7 })
    local bth = mask_ff(tvb:raw(0, BTH_LEN), { 4 })
    local crc = crc_update(0xFFFFFFFF, string.rep("\255", 8))
    crc = crc_update(crc, iph)
    crc = crc_update(crc, udph)
    crc = crc_update(crc, bth)
    local rest = tvb:len() - ICRC_LEN - BTH_LEN
    if rest > 0 then crc = crc_update(crc, tvb:raw(BTH_LEN, rest)) end
    return bxor(crc, 0xFFFFFFFF)
end

-- Per-packet state passed to the header dissectors.
local Ctx = {}
Ctx.__index = Ctx

function Ctx:err(ti, ex, name, msg)
    ti:add_proto_expert_info(ex, "[" .. name .. "] " .. msg)
    if not self.first_error then self.first_error = name end
end

function Ctx:warn(ti, ex, msg) ti:add_proto_expert_info(ex, msg) end

-- A reserved field: `checked` ones make a receiver drop the frame (BadField).
function Ctx:reserved(ti, value, what, checked)
    if value ~= 0 then
        if checked then
            self:err(ti, E.bad_field, "BadField", string.format("%s is 0x%x; must be 0 (receivers drop the frame)", what, value))
        else
            self:warn(ti, E.reserved, string.format("%s is 0x%x; must be sent as 0 (receivers ignore it)", what, value))
        end
    end
end

-- Body bytes [off, off+len) exist? Otherwise report Truncated on ti.
function Ctx:need(ti, len, what)
    if self.body_len < len then
        self:err(ti, E.truncated, "Truncated",
            string.format("%s needs %d body bytes, the frame has %d", what, len, self.body_len))
        return false
    end
    return true
end

local function add_mrh(c, tree)
    local tvb, o = c.tvb, BTH_LEN
    local t = tree:add(F.mrh, tvb(o, MRH_LEN)):set_text("MRH - mroce Routing Header")
    local version = rshift(tvb(o, 1):uint(), 4)
    local vi = t:add(F.mrh_version, tvb(o, 1))
    if version ~= 1 then c:err(vi, E.bad_version, "BadVersion", string.format("MRH version %d; must be 1", version)) end
    local flags = band(tvb(o, 1):uint(), 0x0F)
    local fi = t:add(F.mrh_flags, tvb(o, 1))
    fi:add(F.mrh_retx, tvb(o, 1))
    c:reserved(fi, band(flags, 0x0E), "MRH flag bits 1-3", false)
    t:add(F.mrh_path, tvb(o + 1, 1))
    t:add(F.mrh_plane, tvb(o + 2, 1))
    local ri = t:add(F.mrh_reserved, tvb(o + 3, 1))
    if version == 1 then c:reserved(ri, tvb(o + 3, 1):uint(), "MRH byte 3", true) end
    local psn = tvb(o + 4, 4):uint()
    local floor = tvb(o + 8, 4):uint()
    t:add(F.mrh_psn, tvb(o + 4, 4))
    local fli = t:add(F.mrh_floor, tvb(o + 8, 4))
    if u32sub(psn, floor) >= 0x80000000 then
        c:warn(fli, E.sender, string.format("Floor %s is above PSN %s (a sender MUST NOT send Floor > PSN)", hex32(floor), hex32(psn)))
    end
    t:add(F.mrh_timestamp, tvb(o + 12, 4))
    if band(psn, 0xFFFFFF) ~= c.bth_psn then
        c:warn(c.bth_psn_item, E.sender, string.format("BTH PSN 0x%06x is not the low 24 bits of MRH PSN %s", c.bth_psn, hex32(psn)))
    end
    c.mrh = { path = tvb(o + 1, 1):uint(), psn = psn, version = version, retx = band(flags, 1) ~= 0 }
    return version == 1 and tvb(o + 3, 1):uint() == 0
end

local function add_sdh(c, tree, o)
    local tvb = c.tvb
    local t = tree:add(F.sdh, tvb(o, SDH_LEN)):set_text("SDH - Stream Data Header")
    local si = t:add(F.sdh_stream, tvb(o, 2))
    local stream = tvb(o, 2):uint()
    if stream >= MAX_STREAMS then
        c:warn(si, E.sender, string.format("Stream %d >= %d: the receiver NAKs it (REMOTE_INVALID)", stream, MAX_STREAMS))
    end
    local ri = t:add(F.sdh_reserved, tvb(o + 2, 2))
    c:reserved(ri, tvb(o + 2, 2):uint(), "SDH bytes 2-3", true)
    t:add(F.sdh_msgseq, tvb(o + 4, 4))
    t:add(F.sdh_offset, tvb(o + 8, 4))
    t:add(F.sdh_msglen, tvb(o + 12, 4))
    c.sdh = { stream = stream, msgseq = tvb(o + 4, 4):uint(), offset = tvb(o + 8, 4):uint(), msglen = tvb(o + 12, 4):uint(), item = t }
    return tvb(o + 2, 2):uint() == 0
end

-- Payload of WRITE/SEND and the SDH consistency checks of SPEC.md §4.2.
local function add_payload(c, tree, hl)
    local len = c.body_len - hl
    local tvb = c.tvb
    if len > 0 then
        tree:add(F.payload, tvb(BTH_LEN + hl, len))
    end
    tree:add(F.payload_len, len):set_generated()
    local s = c.sdh
    if len == 0 and s.msglen ~= 0 then
        c:err(s.item, E.bad_field, "BadField", "empty payload in a message with MsgLen " .. s.msglen)
    elseif s.offset + len > s.msglen then
        c:err(s.item, E.bad_field, "BadField",
            string.format("Offset %d + payload %d exceeds MsgLen %d", s.offset, len, s.msglen))
    end
end

local dissect_body = {}

dissect_body[OP.WRITE] = function(c, tree)
    if not c:need(tree, MRH_LEN, "MRH") then return end
    if not add_mrh(c, tree) then return end
    if not c:need(tree, MRH_LEN + SDH_LEN + RPH_LEN, "WRITE headers (MRH, SDH, RPH)") then return end
    if not add_sdh(c, tree, BTH_LEN + MRH_LEN) then return end
    local o = BTH_LEN + MRH_LEN + SDH_LEN
    local t = tree:add(F.rph, c.tvb(o, RPH_LEN)):set_text("RPH - Remote Placement Header")
    t:add(F.rph_va, c.tvb(o, 8))
    t:add(F.rph_rkey, c.tvb(o + 8, 4))
    add_payload(c, tree, MRH_LEN + SDH_LEN + RPH_LEN)
    local s = c.sdh
    c.info = string.format("WRITE path %d PSN %s stream %d msg %d off %d len %d%s", c.mrh.path, hex32(c.mrh.psn),
        s.stream, s.msgseq, s.offset, c.body_len - MRH_LEN - SDH_LEN - RPH_LEN, c.mrh.retx and " RETX" or "")
end

dissect_body[OP.SEND] = function(c, tree)
    if not c:need(tree, MRH_LEN, "MRH") then return end
    if not add_mrh(c, tree) then return end
    if not c:need(tree, MRH_LEN + SDH_LEN, "SDH") then return end
    if not add_sdh(c, tree, BTH_LEN + MRH_LEN) then return end
    if not c:need(tree, MRH_LEN + SDH_LEN + RQH_LEN, "RQH") then return end
    local o = BTH_LEN + MRH_LEN + SDH_LEN
    local t = tree:add(F.rqh, c.tvb(o, RQH_LEN)):set_text("RQH - Receive Queue Header")
    t:add(F.rqh_rsn, c.tvb(o, 4))
    add_payload(c, tree, MRH_LEN + SDH_LEN + RQH_LEN)
    local s = c.sdh
    c.info = string.format("SEND path %d PSN %s stream %d msg %d RSN %d off %d len %d%s", c.mrh.path, hex32(c.mrh.psn),
        s.stream, s.msgseq, c.tvb(o, 4):uint(), s.offset, c.body_len - MRH_LEN - SDH_LEN - RQH_LEN,
        c.mrh.retx and " RETX" or "")
end

dissect_body[OP.PROBE] = function(c, tree)
    if not c:need(tree, MRH_LEN, "MRH") then return end
    if not add_mrh(c, tree) then return end
    if c.body_len ~= MRH_LEN then
        c:err(tree, E.bad_field, "BadField", string.format("PROBE body is %d bytes; must be exactly %d (no payload)", c.body_len, MRH_LEN))
        c.tree:add(F.undecoded, c.tvb(BTH_LEN + MRH_LEN, c.body_len - MRH_LEN))
    end
    c.info = string.format("PROBE path %d PSN %s", c.mrh.path, hex32(c.mrh.psn))
end

-- Fixed-length bodies (ACK, NAK, CM): Truncated if shorter, BadField if longer.
local function fixed_len(c, tree, len, name)
    if not c:need(tree, len, name) then return false end
    if c.body_len ~= len then
        c:err(tree, E.bad_field, "BadField", string.format("%s body is %d bytes; must be exactly %d", name, c.body_len, len))
        tree:add(F.undecoded, c.tvb(BTH_LEN + len, c.body_len - len))
    end
    return true
end

dissect_body[OP.ACK] = function(c, tree)
    if not fixed_len(c, tree, AKH_LEN, "AKH") then return end
    local tvb, o = c.tvb, BTH_LEN
    local t = tree:add(F.akh, tvb(o, AKH_LEN)):set_text("AKH - ACK Header")
    t:add(F.akh_path, tvb(o, 1))
    local fi = t:add(F.akh_flags, tvb(o + 1, 1))
    fi:add(F.akh_probe, tvb(o + 1, 1))
    fi:add(F.akh_announce, tvb(o + 1, 1))
    c:reserved(fi, band(tvb(o + 1, 1):uint(), 0xFC), "AKH flag bits 2-7", false)
    t:add(F.akh_ecncount, tvb(o + 2, 2))
    t:add(F.akh_pktcount, tvb(o + 4, 2))
    local ri = t:add(F.akh_reserved, tvb(o + 6, 2))
    c:reserved(ri, tvb(o + 6, 2):uint(), "AKH bytes 6-7", true)
    local base_psn = tvb(o + 8, 4):uint()
    t:add(F.akh_base, tvb(o + 8, 4))
    local cum_item = t:add(F.akh_cum, tvb(o + 12, 4))
    t:add(F.akh_tsecho, tvb(o + 16, 4))
    t:add(F.akh_ratehint, tvb(o + 20, 4))
    local st = t:add(F.akh_sack, tvb(o + 24, 32)):set_text("SACK (256 bits, 8 words)")
    local words, count, highest = {}, 0, nil
    for k = 0, 7 do
        local w = tvb(o + 24 + 4 * k, 4):uint()
        words[k] = w
        count = count + popcount(w)
        local first = u32add(base_psn, 32 * k)
        local wi = st:add(F["akh_sack_w" .. k], tvb(o + 24 + 4 * k, 4))
        wi:append_text(string.format(" (PSN %s..%s: %d acknowledged)", hex32(first), hex32(u32add(first, 31)), popcount(w)))
        if w ~= 0 then
            local b = 31
            while band(w, lshift(1, b)) == 0 do b = b - 1 end
            highest = u32add(first, b)
        end
    end
    st:add(F.akh_sack_count, count):set_generated()
    local cum = tvb(o + 12, 4):uint()
    local want_cum = u32add(base_psn, trailing_ones(words[0]))
    if cum ~= want_cum then
        c:warn(cum_item, E.sender, string.format("Cum should be Base + trailing ones of word 0 = %s", hex32(want_cum)))
    end
    if highest then
        st:add(F.akh_sack_highest, highest):set_generated()
        local missing, n = {}, 0
        local span = u32sub(highest, base_psn)
        for d = 0, span do
            local k, j = math.floor(d / 32), d % 32
            if band(words[k], lshift(1, j)) == 0 then
                n = n + 1
                if n <= 16 then missing[#missing + 1] = hex32(u32add(base_psn, d)) end
            end
        end
        local txt = table.concat(missing, ", ")
        if n > 16 then txt = txt .. string.format(", ... (%d in all)", n) end
        if n == 0 then txt = "none" end
        st:add(F.akh_sack_missing, txt):set_generated()
    end
    c.info = string.format("ACK path %d base %s cum %s acked %d%s%s", tvb(o, 1):uint(), hex32(base_psn), hex32(cum), count,
        tvb(o + 2, 2):uint() > 0 and " ECN" or "", band(tvb(o + 1, 1):uint(), 1) ~= 0 and " PROBE" or "")
end

dissect_body[OP.NAK] = function(c, tree)
    if not fixed_len(c, tree, NKH_LEN, "NKH") then return end
    local tvb, o = c.tvb, BTH_LEN
    local t = tree:add(F.nkh, tvb(o, NKH_LEN)):set_text("NKH - NAK Header")
    local si = t:add(F.nkh_syndrome, tvb(o, 1))
    local syn = tvb(o, 1):uint()
    if not SYNDROMES[syn] then
        c:warn(si, E.sender, string.format("Syndrome %d is not sent by conforming NICs (treated as REMOTE_INVALID)", syn))
    end
    local ri = t:add(F.nkh_reserved, tvb(o + 1, 1))
    c:reserved(ri, tvb(o + 1, 1):uint(), "NKH byte 1", true)
    t:add(F.nkh_stream, tvb(o + 2, 2))
    t:add(F.nkh_msgseq, tvb(o + 4, 4))
    t:add(F.nkh_offset, tvb(o + 8, 4))
    c.info = string.format("NAK %s stream %d msg %d off %d", SYNDROMES[syn] or tostring(syn), tvb(o + 2, 2):uint(),
        tvb(o + 4, 4):uint(), tvb(o + 8, 4):uint())
end

local function dissect_cm(c, tree)
    if not fixed_len(c, tree, CMH_LEN, "CMH") then return end
    local tvb, o = c.tvb, BTH_LEN
    local t = tree:add(F.cmh, tvb(o, CMH_LEN)):set_text("CMH - Connection Management Header")
    local ri = t:add(F.cmh_reserved, tvb(o, 1))
    c:reserved(ri, tvb(o, 1):uint(), "CMH byte 0", true)
    t:add(F.cmh_srcconn, tvb(o + 1, 3))
    t:add(F.cmh_isn, tvb(o + 4, 4))
    local pi = t:add(F.cmh_paths, tvb(o + 8, 1))
    local pli = t:add(F.cmh_planes, tvb(o + 9, 1))
    local mi = t:add(F.cmh_mtu, tvb(o + 10, 2))
    t:add(F.cmh_streams, tvb(o + 12, 2))
    t:add(F.cmh_reason, tvb(o + 14, 2))
    t:add(F.cmh_rxcapacity, tvb(o + 16, 4))
    t:add(F.cmh_nonce, tvb(o + 20, 8))
    local paths, planes, mtu = tvb(o + 8, 1):uint(), tvb(o + 9, 1):uint(), tvb(o + 10, 2):uint()
    if c.opcode == OP.CONNECT or c.opcode == OP.CONNECT_ACK then
        if paths == 0 or paths > 16 then c:warn(pi, E.sender, "Paths must be 1-16 (§4.6); 0 is dropped (invalid_requests)") end
        if planes == 0 or planes > 8 then c:warn(pli, E.sender, "Planes must be 1-8 (§4.6); 0 or > 8 is dropped (invalid_requests)") end
        if mtu < 64 then c:warn(mi, E.sender, "MTU below 64 is dropped (invalid_requests)") end
    end
    c.info = string.format("%s SrcConn 0x%06x ISN %s paths %d planes %d MTU %d", OPCODE_NAMES[c.opcode],
        tvb(o + 1, 3):uint(), hex32(tvb(o + 4, 4):uint()), paths, planes, mtu)
end
for _, op in ipairs({ OP.CONNECT, OP.CONNECT_ACK, OP.DISCONNECT, OP.DISCONNECT_ACK }) do dissect_body[op] = dissect_cm end

-- ---------------------------------------------------------------------------------------
-- Main dissector
-- ---------------------------------------------------------------------------------------
local function is_mroce_opcode(op)
    if OPCODE_NAMES[op] then return true end
    if op >= 0xC5 and op <= 0xC7 then return true end -- inside mroce's 0xC0-0xCB block
    return mroce.prefs.vendor_range and op >= 0xC0
end

local function dissect_mroce(tvb, pinfo, root)
    local len = tvb:len()
    pinfo.cols.protocol = "mroce"
    local tree = root:add(mroce, tvb())
    local c = setmetatable({ tvb = tvb, tree = tree }, Ctx)
    if len < BTH_LEN + ICRC_LEN then
        tree:add(F.undecoded, tvb())
        c:err(tree, E.truncated, "Truncated", string.format("UDP payload of %d bytes; BTH and ICRC need %d", len, BTH_LEN + ICRC_LEN))
        pinfo.cols.info = "mroce [Truncated]"
        return len
    end
    local opcode = tvb(0, 1):uint()
    c.opcode = opcode
    tree:add(F.opcode, tvb(0, 1)):set_generated()
    -- BTH
    local bt = tree:add(F.bth, tvb(0, BTH_LEN)):set_text("BTH - Base Transport Header")
    bt:add(F.bth_opcode, tvb(0, 1))
    bt:add(F.bth_se, tvb(1, 1))
    local mi = bt:add(F.bth_m, tvb(1, 1))
    c:reserved(mi, band(tvb(1, 1):uint(), 0x40), "BTH M bit", false)
    bt:add(F.bth_padcnt, tvb(1, 1))
    local ti = bt:add(F.bth_tver, tvb(1, 1))
    bt:add(F.bth_pkey, tvb(2, 2))
    local r8 = bt:add(F.bth_resv8, tvb(4, 1))
    c:reserved(r8, tvb(4, 1):uint(), "BTH byte 4", false)
    bt:add(F.bth_destqp, tvb(5, 3))
    bt:add(F.bth_ackreq, tvb(8, 1))
    local r7 = bt:add(F.bth_resv7, tvb(8, 1))
    c:reserved(r7, band(tvb(8, 1):uint(), 0x7F), "BTH reserved 7 bits", false)
    c.bth_psn_item = bt:add(F.bth_psn, tvb(9, 3))
    c.bth_psn = tvb(9, 3):uint()
    -- ICRC (§3.7), checked before the BTH and opcode checks, as a receiver does (§3.8).
    local carried = tvb(len - ICRC_LEN, 4):le_uint()
    local icrc_ok = true
    if mroce.prefs.check_icrc then
        local computed = compute_icrc(tvb)
        if computed then
            c.icrc_computed = computed
            icrc_ok = computed == carried
        end
    end
    -- Body, pad
    local pad = rshift(band(tvb(1, 1):uint(), 0x30), 4)
    local tver = band(tvb(1, 1):uint(), 0x0F)
    local between = len - BTH_LEN - ICRC_LEN
    c.body_len = between - pad
    if not icrc_ok then
        c:err(tree, E.bad_icrc, "BadIcrc", string.format("ICRC %s, computed %s", hex32(carried), hex32(c.icrc_computed)))
    end
    if tver ~= 0 then
        c:err(ti, E.bad_tver, "BadTver", string.format("TVer %d; must be 0", tver))
    end
    local op_name = OPCODE_NAMES[opcode]
    if c.body_len < 0 then
        c:err(bt, E.bad_field, "BadField", string.format("PadCnt %d exceeds the %d body bytes", pad, between))
        c.body_len = between
        pad = 0
        tree:add(F.undecoded, tvb(BTH_LEN, between))
    elseif not op_name then
        c:err(bt, E.unknown_opcode, "UnknownOpcode", string.format("opcode 0x%02x is not defined by mroce (§5.1)", opcode))
        if c.body_len > 0 then tree:add(F.undecoded, tvb(BTH_LEN, c.body_len)) end
    else
        dissect_body[opcode](c, tree)
    end
    if pad > 0 then
        local pi = tree:add(F.pad, tvb(len - ICRC_LEN - pad, pad))
        local pv = tvb(len - ICRC_LEN - pad, pad):bytes()
        for i = 0, pad - 1 do
            if pv:get_index(i) ~= 0 then
                c:warn(pi, E.reserved, "pad bytes must be sent as zero")
                break
            end
        end
    end
    local ii = tree:add(F.icrc, tvb(len - ICRC_LEN, 4), carried)
    if c.icrc_computed then
        tree:add(F.icrc_status, icrc_ok and 0 or 1):set_generated()
        tree:add(F.icrc_computed, c.icrc_computed):set_generated()
    else
        tree:add(F.icrc_status, 2):set_generated()
        if mroce.prefs.check_icrc then c:warn(ii, E.icrc_unverified, "ICRC not verified: no IPv4/UDP header available") end
    end
    tree:append_text(", " .. (op_name or string.format("opcode 0x%02x", opcode)))
    local info = c.info or (op_name or string.format("opcode 0x%02x", opcode))
    if c.first_error then info = info .. " [" .. c.first_error .. "]" end
    pinfo.cols.info = info
    return len
end

function mroce.dissector(tvb, pinfo, root)
    if tvb:len() >= 1 and not is_mroce_opcode(tvb(0, 1):uint()) then
        if builtin then return builtin:call(tvb, pinfo, root) end
        return data_dissector:call(tvb, pinfo, root)
    end
    if builtin and mroce.prefs.builtin_bth and tvb:len() >= BTH_LEN + ICRC_LEN then
        pcall(function() builtin:call(tvb, pinfo, root) end)
    end
    return dissect_mroce(tvb, pinfo, root)
end

udp_table:add(MROCE_PORT, mroce)
udp_table:add_for_decode_as(mroce)
