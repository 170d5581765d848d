"""Nothing stored or handed to our tools runs code or leaks: forged rows, hostile input, secrets."""
