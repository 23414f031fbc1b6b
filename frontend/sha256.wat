;; The proof-of-work search of sha256.js in WebAssembly: SHA-256(prefix + n) for n in a range,
;; from the prefix's midstate. Assembled by frontend/build-wasm.mjs (wabt) into sha256-wasm.js.
;;
;; Memory (one page): 0 K, 256 midstate, 288 state, 320 the candidate's last block(s) (128 bytes),
;; 448 the message schedule W (64 words), 1024.. the prefix that init() reads.
;; State words are kept as numbers (native order); message bytes are big-endian, as SHA-256 reads.
(module
  (memory (export "memory") 1)
  (data (i32.const 0)
    "\98\2f\8a\42\91\44\37\71\cf\fb\c0\b5\a5\db\b5\e9"
    "\5b\c2\56\39\f1\11\f1\59\a4\82\3f\92\d5\5e\1c\ab"
    "\98\aa\07\d8\01\5b\83\12\be\85\31\24\c3\7d\0c\55"
    "\74\5d\be\72\fe\b1\de\80\a7\06\dc\9b\74\f1\9b\c1"
    "\c1\69\9b\e4\86\47\be\ef\c6\9d\c1\0f\cc\a1\0c\24"
    "\6f\2c\e9\2d\aa\84\74\4a\dc\a9\b0\5c\da\88\f9\76"
    "\52\51\3e\98\6d\c6\31\a8\c8\27\03\b0\c7\7f\59\bf"
    "\f3\0b\e0\c6\47\91\a7\d5\51\63\ca\06\67\29\29\14"
    "\85\0a\b7\27\38\21\1b\2e\fc\6d\2c\4d\13\0d\38\53"
    "\54\73\0a\65\bb\0a\6a\76\2e\c9\c2\81\85\2c\72\92"
    "\a1\e8\bf\a2\4b\66\1a\a8\70\8b\4b\c2\a3\51\6c\c7"
    "\19\e8\92\d1\24\06\99\d6\85\35\0e\f4\70\a0\6a\10"
    "\16\c1\a4\19\08\6c\37\1e\4c\77\48\27\b5\bc\b0\34"
    "\b3\0c\1c\39\4a\aa\d8\4e\4f\ca\9c\5b\f3\6f\2e\68"
    "\ee\82\8f\74\6f\63\a5\78\14\78\c8\84\08\02\c7\8c"
    "\fa\ff\be\90\eb\6c\50\a4\f7\a3\f9\be\f2\78\71\c6")

  (func $bswap (param $x i32) (result i32)
    (i32.or
      (i32.or
        (i32.shl (local.get $x) (i32.const 24))
        (i32.shl (i32.and (local.get $x) (i32.const 0xff00)) (i32.const 8)))
      (i32.or
        (i32.and (i32.shr_u (local.get $x) (i32.const 8)) (i32.const 0xff00))
        (i32.shr_u (local.get $x) (i32.const 24)))))

  ;; Mixes the 64-byte block at $p into the 8 state words at $s.
  (func $compress (param $s i32) (param $p i32)
    (local $i i32) (local $x i32) (local $y i32)
    (local $a i32) (local $b i32) (local $c i32) (local $d i32)
    (local $e i32) (local $f i32) (local $g i32) (local $h i32)
    (loop $load
      (i32.store offset=448 (local.get $i)
        (call $bswap (i32.load (i32.add (local.get $p) (local.get $i)))))
      (br_if $load (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 4))) (i32.const 64))))
    (loop $expand
      (local.set $x (i32.load offset=448 (i32.sub (local.get $i) (i32.const 60))))
      (local.set $y (i32.load offset=448 (i32.sub (local.get $i) (i32.const 8))))
      (i32.store offset=448 (local.get $i)
        (i32.add
          (i32.add
            (i32.load offset=448 (i32.sub (local.get $i) (i32.const 64)))
            (i32.xor
              (i32.xor (i32.rotr (local.get $x) (i32.const 7)) (i32.rotr (local.get $x) (i32.const 18)))
              (i32.shr_u (local.get $x) (i32.const 3))))
          (i32.add
            (i32.load offset=448 (i32.sub (local.get $i) (i32.const 28)))
            (i32.xor
              (i32.xor (i32.rotr (local.get $y) (i32.const 17)) (i32.rotr (local.get $y) (i32.const 19)))
              (i32.shr_u (local.get $y) (i32.const 10))))))
      (br_if $expand (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 4))) (i32.const 256))))
    (local.set $a (i32.load offset=0 (local.get $s)))
    (local.set $b (i32.load offset=4 (local.get $s)))
    (local.set $c (i32.load offset=8 (local.get $s)))
    (local.set $d (i32.load offset=12 (local.get $s)))
    (local.set $e (i32.load offset=16 (local.get $s)))
    (local.set $f (i32.load offset=20 (local.get $s)))
    (local.set $g (i32.load offset=24 (local.get $s)))
    (local.set $h (i32.load offset=28 (local.get $s)))
    (local.set $i (i32.const 0))
    ;; Eight rounds a turn: the working variables rotate by name, not by moves.
    (loop $round
      ;; round i + 0: $h += S1($e) + ch + K + W; $d += $h; $h += S0($a) + maj
      (local.set $h
        (i32.add
          (i32.add
            (i32.add (local.get $h)
              (i32.xor
                (i32.xor (i32.rotr (local.get $e) (i32.const 6)) (i32.rotr (local.get $e) (i32.const 11)))
                (i32.rotr (local.get $e) (i32.const 25))))
            (i32.xor (local.get $g) (i32.and (local.get $e) (i32.xor (local.get $f) (local.get $g)))))
          (i32.add (i32.load offset=0 (local.get $i)) (i32.load offset=448 (local.get $i)))))
      (local.set $d (i32.add (local.get $d) (local.get $h)))
      (local.set $h
        (i32.add (local.get $h)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $a) (i32.const 2)) (i32.rotr (local.get $a) (i32.const 13)))
              (i32.rotr (local.get $a) (i32.const 22)))
            (i32.or (i32.and (local.get $a) (local.get $b))
              (i32.and (local.get $c) (i32.or (local.get $a) (local.get $b)))))))
      ;; round i + 1: $g += S1($d) + ch + K + W; $c += $g; $g += S0($h) + maj
      (local.set $g
        (i32.add
          (i32.add
            (i32.add (local.get $g)
              (i32.xor
                (i32.xor (i32.rotr (local.get $d) (i32.const 6)) (i32.rotr (local.get $d) (i32.const 11)))
                (i32.rotr (local.get $d) (i32.const 25))))
            (i32.xor (local.get $f) (i32.and (local.get $d) (i32.xor (local.get $e) (local.get $f)))))
          (i32.add (i32.load offset=4 (local.get $i)) (i32.load offset=452 (local.get $i)))))
      (local.set $c (i32.add (local.get $c) (local.get $g)))
      (local.set $g
        (i32.add (local.get $g)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $h) (i32.const 2)) (i32.rotr (local.get $h) (i32.const 13)))
              (i32.rotr (local.get $h) (i32.const 22)))
            (i32.or (i32.and (local.get $h) (local.get $a))
              (i32.and (local.get $b) (i32.or (local.get $h) (local.get $a)))))))
      ;; round i + 2: $f += S1($c) + ch + K + W; $b += $f; $f += S0($g) + maj
      (local.set $f
        (i32.add
          (i32.add
            (i32.add (local.get $f)
              (i32.xor
                (i32.xor (i32.rotr (local.get $c) (i32.const 6)) (i32.rotr (local.get $c) (i32.const 11)))
                (i32.rotr (local.get $c) (i32.const 25))))
            (i32.xor (local.get $e) (i32.and (local.get $c) (i32.xor (local.get $d) (local.get $e)))))
          (i32.add (i32.load offset=8 (local.get $i)) (i32.load offset=456 (local.get $i)))))
      (local.set $b (i32.add (local.get $b) (local.get $f)))
      (local.set $f
        (i32.add (local.get $f)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $g) (i32.const 2)) (i32.rotr (local.get $g) (i32.const 13)))
              (i32.rotr (local.get $g) (i32.const 22)))
            (i32.or (i32.and (local.get $g) (local.get $h))
              (i32.and (local.get $a) (i32.or (local.get $g) (local.get $h)))))))
      ;; round i + 3: $e += S1($b) + ch + K + W; $a += $e; $e += S0($f) + maj
      (local.set $e
        (i32.add
          (i32.add
            (i32.add (local.get $e)
              (i32.xor
                (i32.xor (i32.rotr (local.get $b) (i32.const 6)) (i32.rotr (local.get $b) (i32.const 11)))
                (i32.rotr (local.get $b) (i32.const 25))))
            (i32.xor (local.get $d) (i32.and (local.get $b) (i32.xor (local.get $c) (local.get $d)))))
          (i32.add (i32.load offset=12 (local.get $i)) (i32.load offset=460 (local.get $i)))))
      (local.set $a (i32.add (local.get $a) (local.get $e)))
      (local.set $e
        (i32.add (local.get $e)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $f) (i32.const 2)) (i32.rotr (local.get $f) (i32.const 13)))
              (i32.rotr (local.get $f) (i32.const 22)))
            (i32.or (i32.and (local.get $f) (local.get $g))
              (i32.and (local.get $h) (i32.or (local.get $f) (local.get $g)))))))
      ;; round i + 4: $d += S1($a) + ch + K + W; $h += $d; $d += S0($e) + maj
      (local.set $d
        (i32.add
          (i32.add
            (i32.add (local.get $d)
              (i32.xor
                (i32.xor (i32.rotr (local.get $a) (i32.const 6)) (i32.rotr (local.get $a) (i32.const 11)))
                (i32.rotr (local.get $a) (i32.const 25))))
            (i32.xor (local.get $c) (i32.and (local.get $a) (i32.xor (local.get $b) (local.get $c)))))
          (i32.add (i32.load offset=16 (local.get $i)) (i32.load offset=464 (local.get $i)))))
      (local.set $h (i32.add (local.get $h) (local.get $d)))
      (local.set $d
        (i32.add (local.get $d)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $e) (i32.const 2)) (i32.rotr (local.get $e) (i32.const 13)))
              (i32.rotr (local.get $e) (i32.const 22)))
            (i32.or (i32.and (local.get $e) (local.get $f))
              (i32.and (local.get $g) (i32.or (local.get $e) (local.get $f)))))))
      ;; round i + 5: $c += S1($h) + ch + K + W; $g += $c; $c += S0($d) + maj
      (local.set $c
        (i32.add
          (i32.add
            (i32.add (local.get $c)
              (i32.xor
                (i32.xor (i32.rotr (local.get $h) (i32.const 6)) (i32.rotr (local.get $h) (i32.const 11)))
                (i32.rotr (local.get $h) (i32.const 25))))
            (i32.xor (local.get $b) (i32.and (local.get $h) (i32.xor (local.get $a) (local.get $b)))))
          (i32.add (i32.load offset=20 (local.get $i)) (i32.load offset=468 (local.get $i)))))
      (local.set $g (i32.add (local.get $g) (local.get $c)))
      (local.set $c
        (i32.add (local.get $c)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $d) (i32.const 2)) (i32.rotr (local.get $d) (i32.const 13)))
              (i32.rotr (local.get $d) (i32.const 22)))
            (i32.or (i32.and (local.get $d) (local.get $e))
              (i32.and (local.get $f) (i32.or (local.get $d) (local.get $e)))))))
      ;; round i + 6: $b += S1($g) + ch + K + W; $f += $b; $b += S0($c) + maj
      (local.set $b
        (i32.add
          (i32.add
            (i32.add (local.get $b)
              (i32.xor
                (i32.xor (i32.rotr (local.get $g) (i32.const 6)) (i32.rotr (local.get $g) (i32.const 11)))
                (i32.rotr (local.get $g) (i32.const 25))))
            (i32.xor (local.get $a) (i32.and (local.get $g) (i32.xor (local.get $h) (local.get $a)))))
          (i32.add (i32.load offset=24 (local.get $i)) (i32.load offset=472 (local.get $i)))))
      (local.set $f (i32.add (local.get $f) (local.get $b)))
      (local.set $b
        (i32.add (local.get $b)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $c) (i32.const 2)) (i32.rotr (local.get $c) (i32.const 13)))
              (i32.rotr (local.get $c) (i32.const 22)))
            (i32.or (i32.and (local.get $c) (local.get $d))
              (i32.and (local.get $e) (i32.or (local.get $c) (local.get $d)))))))
      ;; round i + 7: $a += S1($f) + ch + K + W; $e += $a; $a += S0($b) + maj
      (local.set $a
        (i32.add
          (i32.add
            (i32.add (local.get $a)
              (i32.xor
                (i32.xor (i32.rotr (local.get $f) (i32.const 6)) (i32.rotr (local.get $f) (i32.const 11)))
                (i32.rotr (local.get $f) (i32.const 25))))
            (i32.xor (local.get $h) (i32.and (local.get $f) (i32.xor (local.get $g) (local.get $h)))))
          (i32.add (i32.load offset=28 (local.get $i)) (i32.load offset=476 (local.get $i)))))
      (local.set $e (i32.add (local.get $e) (local.get $a)))
      (local.set $a
        (i32.add (local.get $a)
          (i32.add
            (i32.xor
              (i32.xor (i32.rotr (local.get $b) (i32.const 2)) (i32.rotr (local.get $b) (i32.const 13)))
              (i32.rotr (local.get $b) (i32.const 22)))
            (i32.or (i32.and (local.get $b) (local.get $c))
              (i32.and (local.get $d) (i32.or (local.get $b) (local.get $c)))))))

      (br_if $round (i32.lt_u (local.tee $i (i32.add (local.get $i) (i32.const 32))) (i32.const 256))))
    (i32.store offset=0 (local.get $s) (i32.add (i32.load offset=0 (local.get $s)) (local.get $a)))
    (i32.store offset=4 (local.get $s) (i32.add (i32.load offset=4 (local.get $s)) (local.get $b)))
    (i32.store offset=8 (local.get $s) (i32.add (i32.load offset=8 (local.get $s)) (local.get $c)))
    (i32.store offset=12 (local.get $s) (i32.add (i32.load offset=12 (local.get $s)) (local.get $d)))
    (i32.store offset=16 (local.get $s) (i32.add (i32.load offset=16 (local.get $s)) (local.get $e)))
    (i32.store offset=20 (local.get $s) (i32.add (i32.load offset=20 (local.get $s)) (local.get $f)))
    (i32.store offset=24 (local.get $s) (i32.add (i32.load offset=24 (local.get $s)) (local.get $g)))
    (i32.store offset=28 (local.get $s) (i32.add (i32.load offset=28 (local.get $s)) (local.get $h))))

  ;; Hashes the whole blocks of the $len-byte prefix at 1024 into the midstate and copies what is
  ;; left of it (returned: its length, under 64) to 320, where each candidate is written after it.
  (func (export "init") (param $len i32) (result i32)
    (local $full i32) (local $i i32)
    (i32.store offset=256 (i32.const 0) (i32.const 0x6a09e667))
    (i32.store offset=260 (i32.const 0) (i32.const 0xbb67ae85))
    (i32.store offset=264 (i32.const 0) (i32.const 0x3c6ef372))
    (i32.store offset=268 (i32.const 0) (i32.const 0xa54ff53a))
    (i32.store offset=272 (i32.const 0) (i32.const 0x510e527f))
    (i32.store offset=276 (i32.const 0) (i32.const 0x9b05688c))
    (i32.store offset=280 (i32.const 0) (i32.const 0x1f83d9ab))
    (i32.store offset=284 (i32.const 0) (i32.const 0x5be0cd19))
    (local.set $full (i32.and (local.get $len) (i32.const -64)))
    (block $hashed
      (loop $blocks
        (br_if $hashed (i32.ge_u (local.get $i) (local.get $full)))
        (call $compress (i32.const 256) (i32.add (i32.const 1024) (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 64)))
        (br $blocks)))
    (local.set $i (i32.const 0))
    (block $copied
      (loop $copy
        (br_if $copied (i32.ge_u (local.get $i) (i32.sub (local.get $len) (local.get $full))))
        (i32.store8 offset=320 (local.get $i)
          (i32.load8_u offset=1024 (i32.add (local.get $full) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (i32.sub (local.get $len) (local.get $full)))

  ;; True when the state's first $bits bits (0-64) are zero.
  (func $meets (param $bits i32) (result i32)
    (if (result i32) (i32.le_u (local.get $bits) (i32.const 32))
      (then
        (if (result i32) (i32.eqz (local.get $bits))
          (then (i32.const 1))
          (else (i32.eqz (i32.shr_u (i32.load offset=288 (i32.const 0))
                                    (i32.sub (i32.const 32) (local.get $bits)))))))
      (else
        (i32.and
          (i32.eqz (i32.load offset=288 (i32.const 0)))
          (i32.eqz (i32.shr_u (i32.load offset=292 (i32.const 0))
                              (i32.sub (i32.const 64) (local.get $bits))))))))

  ;; The first n in [from, from + count) such that SHA-256(prefix + decimal n) starts with $bits
  ;; zero bits, or -1; the prefix is the one init() took ($tail bytes left, $total in all).
  (func (export "search")
    (param $tail i32) (param $total i32) (param $bits i32) (param $from i32) (param $count i32)
    (result i32)
    (local $n i32) (local $end i32) (local $digits i32) (local $used i32) (local $q i32)
    (local $i i32) (local $size i32)
    (local.set $n (local.get $from))
    (local.set $end (i32.add (local.get $from) (local.get $count)))
    (block $none
      (loop $next
        (br_if $none (i32.ge_u (local.get $n) (local.get $end)))
        (local.set $digits (i32.const 1))
        (local.set $q (local.get $n))
        (block $counted
          (loop $count
            (br_if $counted (i32.lt_u (local.get $q) (i32.const 10)))
            (local.set $q (i32.div_u (local.get $q) (i32.const 10)))
            (local.set $digits (i32.add (local.get $digits) (i32.const 1)))
            (br $count)))
        (local.set $used (i32.add (local.get $tail) (local.get $digits)))
        ;; The digits, last first.
        (local.set $q (local.get $n))
        (local.set $i (i32.add (i32.const 320) (local.get $used)))
        (loop $digit
          (local.set $i (i32.sub (local.get $i) (i32.const 1)))
          (i32.store8 (local.get $i)
            (i32.add (i32.const 48) (i32.rem_u (local.get $q) (i32.const 10))))
          (br_if $digit (local.tee $q (i32.div_u (local.get $q) (i32.const 10)))))
        ;; Padding: 0x80, zeros, the length in bits (big-endian; its high word is 0 here).
        (i32.store8 offset=320 (local.get $used) (i32.const 0x80))
        (local.set $size
          (select (i32.const 64) (i32.const 128)
            (i32.le_u (i32.add (local.get $used) (i32.const 9)) (i32.const 64))))
        (local.set $i (i32.add (local.get $used) (i32.const 1)))
        (block $zeroed
          (loop $zero
            (br_if $zeroed (i32.ge_u (local.get $i) (i32.sub (local.get $size) (i32.const 4))))
            (i32.store8 offset=320 (local.get $i) (i32.const 0))
            (local.set $i (i32.add (local.get $i) (i32.const 1)))
            (br $zero)))
        (i32.store offset=316 (local.get $size)
          (call $bswap (i32.shl (i32.add (local.get $total) (local.get $digits)) (i32.const 3))))
        (i64.store offset=288 (i32.const 0) (i64.load offset=256 (i32.const 0)))
        (i64.store offset=296 (i32.const 0) (i64.load offset=264 (i32.const 0)))
        (i64.store offset=304 (i32.const 0) (i64.load offset=272 (i32.const 0)))
        (i64.store offset=312 (i32.const 0) (i64.load offset=280 (i32.const 0)))
        (call $compress (i32.const 288) (i32.const 320))
        (if (i32.eq (local.get $size) (i32.const 128))
          (then (call $compress (i32.const 288) (i32.const 384))))
        (if (call $meets (local.get $bits)) (then (return (local.get $n))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $next)))
    (i32.const -1)))
