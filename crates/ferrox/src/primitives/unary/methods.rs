//! Method forms of the unary ops most used on arrays (MLX's `array` methods).
